package store

import (
	"context"
	"strings"
	"testing"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// flushBeforeEvalsha is a go-redis hook that runs SCRIPT FLUSH (through
// another client) right before every EVALSHA, alone or in a pipeline: the
// script cache is empty whenever a script call arrives, as under the fault
// suite's repeated flushes, including between a SCRIPT LOAD and the EVALSHA
// after it.
type flushBeforeEvalsha struct{ admin *redis.Client }

func (h flushBeforeEvalsha) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h flushBeforeEvalsha) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "evalsha") {
			h.admin.ScriptFlush(ctx)
		}
		return next(ctx, cmd)
	}
}

func (h flushBeforeEvalsha) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if strings.EqualFold(c.Name(), "evalsha") {
				h.admin.ScriptFlush(ctx)
				break
			}
		}
		return next(ctx, cmds)
	}
}

// flushingClient is a client of a private server (flushes must not reach
// other tests) whose every EVALSHA finds the script cache empty.
func flushingClient(t *testing.T) *redis.Client {
	t.Helper()
	s := redistest.StartT(t)
	admin := redistest.NewClient(t, s)
	rdb := redistest.NewClient(t, s)
	rdb.AddHook(flushBeforeEvalsha{admin: admin})
	return rdb
}

var onceCountScript = NewScript("return redis.call('INCR', KEYS[1])")

// Before the EVAL fallback, every call here failed with a bare "NOSCRIPT No
// matching script": the load-then-EVALSHA retry met the next flush.
func TestScriptCallsRunOnceWhenEveryEvalshaMeetsAFlush(t *testing.T) {
	rdb := flushingClient(t)
	ctx := t.Context()
	key := redistest.Prefix(t) + "n"
	for i := int64(1); i <= 3; i++ {
		n, err := onceCountScript.Run(ctx, rdb, []string{key}).Int64()
		if err != nil || n != i {
			t.Fatalf("call %d: got %d, %v; want %d (ran exactly once)", i, n, err, i)
		}
	}

	c := New(rdb, &Options{NoBatching: true, NoRegistry: true})
	name := redistest.Prefix(t) + "lock"
	for _, l := range []interface {
		TryLock(context.Context) error
		Unlock(context.Context) error
	}{
		c.NewLock(name+":plain", nil), c.NewFencedLock(name+":fenced", nil), c.NewFairLock(name+":fair", nil),
		c.NewRWLock(name+":rw", nil).Writer(), c.NewSpinLock(name+":spin", nil),
	} {
		if err := l.TryLock(ctx); err != nil {
			t.Fatalf("%T TryLock: %v", l, err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("%T Unlock: %v", l, err)
		}
	}
}

// A call of a script not declared with NewScript has no text to fall back
// on: its NOSCRIPT is returned as it is (it did not run).
func TestRunOnceWithoutTextKeepsNoscript(t *testing.T) {
	rdb := flushingClient(t)
	s := redis.NewScript("return redis.call('INCR', KEYS[1]) -- undeclared")
	key := redistest.Prefix(t) + "n"
	err := wire.RunOnce(t.Context(), rdb, []any{"evalsha", s.Hash(), "1", key}).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
		t.Fatalf("got %v, want NOSCRIPT", err)
	}
	if n, _ := rdb.Get(t.Context(), key).Int64(); n != 0 {
		t.Fatalf("the script ran %d times", n)
	}
}

// A batch whose EVALSHA calls all meet NOSCRIPT sends them again as EVAL:
// each runs once. Before, the batch re-sent EVALSHA after a SCRIPT LOAD and
// every call failed with NOSCRIPT.
func TestBatchAnswersNoscriptWithEval(t *testing.T) {
	rdb := flushingClient(t)
	b := newBatcher(rdb)
	key := redistest.Prefix(t) + "n"
	var calls []*batchCall
	for range 4 {
		p := onceCountScript.prepare([]string{key})
		calls = append(calls, &batchCall{ctx: t.Context(), p: &p, done: make(chan struct{})})
	}
	b.send(calls)
	seen := map[int64]bool{}
	for i, c := range calls {
		n, err := c.cmd.Int64()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		seen[n] = true
	}
	if n, _ := rdb.Get(t.Context(), key).Int64(); n != 4 || len(seen) != 4 {
		t.Fatalf("4 calls ran %d times (replies %v)", n, seen)
	}
}
