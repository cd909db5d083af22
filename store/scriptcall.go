package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Every script call in this package goes out through sendOnce: never
// re-sent by go-redis, its network errors reported as ErrUncertain (see the
// package doc for why, and for what acquires do about it).

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

// run sends the call once. When Redis does not have the script (restarted,
// SCRIPT FLUSH, a new Cluster node) it did not run it, so the script is
// loaded (idempotent) and the call sent again: still one execution.
func (p *preparedCall) run(ctx context.Context, rdb redis.UniversalClient) *redis.Cmd {
	cmd := sendOnce(ctx, rdb, p.cmd)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := p.script.Load(ctx, rdb).Err(); err != nil {
			cmd.SetErr(markUncertain(err))
			return cmd
		}
		cmd = sendOnce(ctx, rdb, p.cmd)
	}
	cmd.SetErr(markUncertain(cmd.Err()))
	return cmd
}

// sendOnce sends one command that go-redis must not re-send: its single
// command retry (redis.go _process, v9.23) fires after a read timeout or a
// dropped connection, exactly when the first send may have run, and is
// skipped for a command whose NoRetry is true (processWithRetry; the
// Cluster client's process checks it too).
func sendOnce(ctx context.Context, rdb redis.UniversalClient, args []any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	_ = rdb.Process(ctx, noRetryCmd{cmd})
	return cmd
}

// runScript is Script.Run without go-redis's re-sends: the one way this
// package sends a script that is not prepared.
func runScript(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, keys []string, argv ...any) *redis.Cmd {
	p := prepare(s, keys, argv...)
	return p.run(ctx, rdb)
}

// markUncertain wraps an error that leaves the outcome unknown (no reply:
// timeout, dropped connection, ctx ended) in ErrUncertain. Redis's own
// replies (redis.Nil, script errors, WRONGTYPE) are certain and kept as
// they are; so is an already marked error.
func markUncertain(err error) error {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, ErrUncertain) {
		return err
	}
	var re redis.Error
	if errors.As(err, &re) {
		return err
	}
	return &UncertainError{Err: err}
}

// UncertainError is a script call that got no reply: it may or may not
// have been applied. It matches ErrUncertain and the network or context
// error with errors.Is.
type UncertainError struct{ Err error }

func (e *UncertainError) Error() string { return fmt.Sprintf("%v: %v", ErrUncertain, e.Err) }

// Is makes errors.Is(err, ErrUncertain) true.
func (e *UncertainError) Is(target error) bool { return target == ErrUncertain }

func (e *UncertainError) Unwrap() error { return e.Err }

// call sends p through the Client's batcher, or alone when batching is off.
func (c *Client) call(ctx context.Context, p *preparedCall) *redis.Cmd {
	c.reg.touch(p.keys[0])
	if c.batch == nil {
		return p.run(ctx, c.rdb)
	}
	return c.batch.run(ctx, p)
}
