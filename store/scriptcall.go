package store

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Every script call in this package goes out through wire.RunOnce: never
// re-sent by go-redis, its network errors reported as ErrUncertain (see the
// package doc for why, and for what acquires do about it).

// preparedCall is a script call whose keys and arguments never change for a
// handle (a lock's acquire and release, a bucket's acquire of one permit).
// The EVALSHA command is built once, so a call allocates no argument list
// and boxes no key or argument; go-redis only reads the slice, so
// concurrent calls share it.
type preparedCall struct {
	cmd []any // "evalsha", sha, numkeys, keys..., argv...
}

func prepare(s *redis.Script, keys []string, argv ...any) preparedCall {
	cmd := make([]any, 0, 3+len(keys)+len(argv))
	cmd = append(cmd, "evalsha", s.Hash(), strconv.Itoa(len(keys)))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return preparedCall{cmd: append(cmd, argv...)}
}

// run sends the call once. When Redis does not have the script (restarted,
// SCRIPT FLUSH, a new Cluster node) it did not run it, so the script's text
// goes out once with EVAL, which cannot answer NOSCRIPT (a SCRIPT LOAD and
// another EVALSHA could meet the next flush): still one execution.
func (p *preparedCall) run(ctx context.Context, rdb redis.UniversalClient) *redis.Cmd {
	cmd := wire.RunOnce(ctx, rdb, p.cmd)
	cmd.SetErr(markUncertain(cmd.Err()))
	return cmd
}

// newScript declares a script of this package: its text is kept for the
// EVAL that follows a NOSCRIPT (see preparedCall.run).
func newScript(name string) *redis.Script { return wire.NewScript(luascripts.Source(name)) }

// runScript is Script.Run without go-redis's re-sends: the one way this
// package sends a script that is not prepared.
func runScript(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, keys []string, argv ...any) *redis.Cmd {
	p := prepare(s, keys, argv...)
	return p.run(ctx, rdb)
}

// NewScript declares a script for RunScriptOnce: like redis.NewScript, but
// the text is kept so that a NOSCRIPT reply can be answered with one EVAL.
func NewScript(src string) *redis.Script { return wire.NewScript(src) }

// RunScriptOnce runs s over keys and argv at most once, which Script.Run
// does not promise (go-redis re-sends a command whose reply was lost). A
// NOSCRIPT reply is followed by one EVAL of the text when s was declared
// with NewScript (otherwise the NOSCRIPT error is returned: nothing ran).
// An error that leaves the outcome unknown (timeout, dropped connection,
// ctx ended on the wire) matches ErrUncertain; replies of Redis (redis.Nil,
// script errors) are returned as they are.
func RunScriptOnce(ctx context.Context, rdb redis.UniversalClient, s *redis.Script, keys []string, argv ...any) *redis.Cmd {
	return runScript(ctx, rdb, s, keys, argv...)
}

// refused reports a Redis error reply that means the script wrote nothing:
// the command was refused before it ran (LOADING after a restart, BUSY,
// MASTERDOWN, CLUSTERDOWN, TRYAGAIN, NOREPLICAS, MISCONF), or a write in
// it was and no earlier one succeeded: Redis answers OOM only for a script
// that has not written yet, and a read-only replica (READONLY, after a
// failover) refuses every write. The script ends at the refusal, so an
// acquire refused this way took nothing: ErrNotObtained. MOVED and ASK
// (the slot is served elsewhere) reach this package only from the calls
// it sends to a Cluster node directly (replica_ack.go), and ran nothing.
func refused(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range refusedPrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

var refusedPrefixes = []string{"LOADING ", "BUSY ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ",
	"NOREPLICAS ", "MISCONF ", "OOM ", "READONLY ", "MOVED ", "ASK "}

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

// runScript is runScript for the Client's objects: keys[0] is the object,
// marked as used so that the registry's next beat re-announces it (a lock
// held and renewed for an hour, or a counter hit all day, stays listed).
// The mark is a map lookup, no Redis call.
func (c *Client) runScript(ctx context.Context, s *redis.Script, keys []string, argv ...any) *redis.Cmd {
	if len(keys) > 0 {
		c.reg.touch(keys[0])
	}
	return runScript(ctx, c.rdb, s, keys, argv...)
}

// call sends p through the Client's batcher, or alone when batching is off.
func (c *Client) call(ctx context.Context, p *preparedCall) *redis.Cmd {
	if len(p.cmd) > 3 { // "evalsha", sha, numkeys, the object's own key, ...
		if name, ok := p.cmd[3].(string); ok {
			c.reg.touch(name)
		}
	}
	if c.batch == nil {
		return p.run(ctx, c.rdb)
	}
	return c.batch.run(ctx, p)
}
