package store

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// preparedCall is a script call whose keys and arguments never change for a
// handle (a lock's acquire and release, a bucket's acquire of one permit).
// The EVALSHA command is built once, so a call allocates no argument list
// and boxes no key or argument; go-redis only reads the slice, so
// concurrent calls share it.
type preparedCall struct {
	script *redis.Script
	keys   []string
	argv   []any
	cmd    []any // "evalsha", sha, numkeys, keys..., argv...
}

func prepare(s *redis.Script, keys []string, argv ...any) preparedCall {
	cmd := make([]any, 0, 3+len(keys)+len(argv))
	cmd = append(cmd, "evalsha", s.Hash(), strconv.Itoa(len(keys)))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return preparedCall{script: s, keys: keys, argv: argv, cmd: append(cmd, argv...)}
}

// run sends the call. When Redis does not have the script (restarted,
// SCRIPT FLUSH, a new Cluster node) Script.Run sends its text with EVAL,
// which caches it again.
func (p *preparedCall) run(ctx context.Context, rdb redis.UniversalClient) *redis.Cmd {
	cmd := rdb.Do(ctx, p.cmd...)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return p.script.Run(ctx, rdb, p.keys, p.argv...)
	}
	return cmd
}

// call sends p through the Client's batcher, or alone when batching is off.
func (c *Client) call(ctx context.Context, p *preparedCall) *redis.Cmd {
	c.reg.touch(p.keys[0])
	if c.batch == nil {
		return p.run(ctx, c.rdb)
	}
	return c.batch.run(ctx, p)
}
