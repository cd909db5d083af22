package store

import (
	"testing"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// Calls queued on a pipeline that all meet NOSCRIPT run once each, by
// EvalNoScript, and their replies land on the queued Cmds.
func TestScriptQueueThenEvalNoScriptRunsEachOnce(t *testing.T) {
	rdb := flushingClient(t)
	ctx := t.Context()
	key := redistest.Prefix(t) + "n"
	pipe := rdb.Pipeline()
	var cmds []*redis.Cmd
	for range 3 {
		cmds = append(cmds, onceCountScript.Queue(ctx, pipe, []string{key}))
	}
	_, _ = pipe.Exec(ctx)
	for i, c := range cmds {
		if err := c.Err(); err == nil || !redis.HasErrorPrefix(err, "NOSCRIPT") {
			t.Fatalf("call %d before EvalNoScript: %v, want NOSCRIPT", i, err)
		}
	}
	if err := EvalNoScript(ctx, rdb, cmds); err != nil {
		t.Fatal(err)
	}
	for i, c := range cmds {
		if n, err := c.Int64(); err != nil || n != int64(i+1) {
			t.Fatalf("call %d: got %d, %v; want %d", i, n, err, i+1)
		}
	}
	if n, _ := rdb.Get(ctx, key).Int64(); n != 3 {
		t.Fatalf("3 calls ran %d times", n)
	}
	if err := EvalNoScript(ctx, rdb, cmds); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Get(ctx, key).Int64(); n != 3 {
		t.Fatalf("EvalNoScript ran answered calls again: %d runs", n)
	}
}

// A pipeline holding a queued script call is not sent again when its
// reply is lost: go-redis replays a whole pipeline after a network error
// unless a command in it says NoRetry. Queued with Pipeliner.EvalSha, as
// the history's writer and the limiter state reads did, the call ran
// twice.
func TestScriptQueueLostReplyNotResent(t *testing.T) {
	p := startLostReplyProxy(t)
	rdb := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String()})
	t.Cleanup(func() { rdb.Close() })
	ctx := t.Context()
	// The pipeline's connection is dialed here (a first pipeline dialed
	// one of its own), so the reply lost below is the call's, not a HELLO.
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error { return p.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	if err := onceCountScript.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	key := redistest.Prefix(t) + "n"
	pipe := rdb.Pipeline()
	cmd := onceCountScript.Queue(ctx, pipe, []string{key})
	p.arm()
	_, _ = pipe.Exec(ctx)
	p.waitLost(t)
	if cmd.Err() == nil {
		t.Fatalf("the lost reply read as %v", cmd.Val())
	}
	if n, _ := redistest.Client(t).Get(ctx, key).Int64(); n != 1 {
		t.Fatalf("one queued call ran %d times", n)
	}
}
