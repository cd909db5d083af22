package store

import (
	"context"
	"errors"
	"strings"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Every script call in this module goes out as a Script: never re-sent by
// go-redis, its network errors reported as ErrUncertain (see the package
// doc for why, and for what acquires do about it).

// Script is a Lua script sent the way every script of this module is sent:
// as EVALSHA, never re-sent (go-redis re-sends a command whose reply was
// lost, which would run a script twice), and after a NOSCRIPT reply (the
// script did not run: restart, SCRIPT FLUSH, a new Cluster node) as one
// EVAL of its text, which cannot answer NOSCRIPT. Applications that run
// scripts of their own declare them with NewScript; the zero Script is not
// usable.
type Script struct{ w *wire.Script }

// NewScript declares the script src.
func NewScript(src string) *Script { return &Script{w: wire.NewScript(src)} }

// newScript declares the luascripts script name.
func newScript(name string) *Script { return NewScript(luascripts.Source(name)) }

// Run runs the script over keys and argv at most once. An error that
// leaves the outcome unknown (timeout, dropped connection, ctx ended on
// the wire) matches ErrUncertain; replies of Redis (redis.Nil, script
// errors) are returned as they are.
func (s *Script) Run(ctx context.Context, rdb redis.UniversalClient, keys []string, argv ...any) *redis.Cmd {
	p := s.prepare(keys, argv...)
	return p.run(ctx, rdb)
}

// Queue adds the script's EVALSHA over keys and argv to pipe, marked not to
// be re-sent; its reply is on the returned Cmd once pipe has run. Calls
// answered NOSCRIPT did not run: EvalNoScript runs them.
func (s *Script) Queue(ctx context.Context, pipe redis.Pipeliner, keys []string, argv ...any) *redis.Cmd {
	return s.w.Queue(ctx, pipe, keys, argv...)
}

// Load sends the script's text with SCRIPT LOAD (a ClusterClient loads it
// on every master), so that the calls queued after it find it.
func (s *Script) Load(ctx context.Context, rdb redis.Scripter) *redis.StringCmd {
	return s.w.Load(ctx, rdb)
}

// EvalNoScript runs, with one EVAL each in one pipeline of rdb, the calls
// among cmds (queued with Script.Queue and executed) that Redis answered
// NOSCRIPT, and sets each one's reply on it. The error is that
// pipeline's; nothing is sent when no call needs it.
func EvalNoScript(ctx context.Context, rdb redis.UniversalClient, cmds []*redis.Cmd) error {
	return wire.EvalNoScript(ctx, rdb, cmds)
}

// preparedCall is a script call whose keys and arguments never change for a
// handle (a lock's acquire and release, a bucket's acquire of one permit).
// The EVALSHA command is built once, so a call allocates no argument list
// and boxes no key or argument; go-redis only reads the slice, so
// concurrent calls share it.
type preparedCall struct {
	cmd []any // wire.Script.Args: "evalsha", sha, numkeys, keys..., argv...
}

func (s *Script) prepare(keys []string, argv ...any) preparedCall {
	return preparedCall{cmd: s.w.Args(keys, argv...)}
}

// run sends the call once (wire.RunOnce).
func (p *preparedCall) run(ctx context.Context, rdb redis.UniversalClient) *redis.Cmd {
	cmd := wire.RunOnce(ctx, rdb, p.cmd)
	cmd.SetErr(markUncertain(cmd.Err()))
	return cmd
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

// runScript is Script.Run for the Client's objects: keys[0] is the
// object, marked as used so that the registry's next beat re-announces it
// (a lock held and renewed for an hour, or a counter hit all day, stays
// listed). The mark is a map lookup, no Redis call.
func (c *Client) runScript(ctx context.Context, s *Script, keys []string, argv ...any) *redis.Cmd {
	if len(keys) > 0 {
		c.reg.touch(keys[0])
	}
	return s.Run(ctx, c.rdb, keys, argv...)
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
