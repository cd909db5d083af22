package web

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// pingHook counts the PINGs a client sends as commands (a subscription's
// own keep-alive PINGs do not pass here).
type pingHook struct{ n atomic.Int64 }

func (h *pingHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *pingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "ping" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *pingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// On one node the tick's own pipeline proves the node up, so the health
// probe sends no PING of its own while ticks are answered: a tick stays
// the console's one round trip (case 8 counted the probe's PING as a
// single call a second). When ticks stop being answered, the probe runs.
func TestNodeProbeRidesOnTicksOnOneNode(t *testing.T) {
	// Its own server and mostly waiting: it runs beside the others.
	t.Parallel()
	srv := redistest.StartT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	hook := &pingHook{}
	rdb.AddHook(hook)
	e := newEnvOn(t, rdb, fastTicks)
	eventually(t, 10*time.Second, "the node probed up", func() bool {
		n := e.srv.live.Nodes()
		return len(n) == 1 && n[0].Up
	})
	time.Sleep(500 * time.Millisecond) // a probe that started before the first tick is done
	before := hook.n.Load()
	time.Sleep(3 * time.Second)
	if n := hook.n.Load() - before; n != 0 {
		t.Errorf("%d PINGs in %v of answered ticks, want none", n, 3*time.Second)
	}
	if n := e.srv.live.Nodes(); len(n) != 1 || !n[0].Up {
		t.Errorf("nodes = %+v, want the one node up", n)
	}

	// Redis stops answering: the probe runs again and finds it down.
	srv.Pause()
	eventually(t, 10*time.Second, "the node probed down", func() bool {
		n := e.srv.live.Nodes()
		return len(n) == 1 && !n[0].Up
	})
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
}
