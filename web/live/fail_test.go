package live

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/events"
)

// One tick that fails (here: Redis paused a little past the read's 1 s
// bound, so the next tick is answered) keeps the last good snapshot: no
// observer, and so no list page, ever sees Redis as down for it. Two in a
// row do say it is down.
func TestOneFailedTickKeepsTheLastSnapshot(t *testing.T) {
	srv := redistest.StartT(t)
	// go-redis bounds a read by ReadTimeout, not by the tick's context
	// (ContextTimeoutEnabled is off, as in serve); no retry hides a
	// failed read.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: time.Second, MaxRetries: -1})
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close(); admin.Close() })
	// A held lock: every tick reads it (a tick with nothing to read sends
	// nothing).
	app := store.New(admin, nil)
	t.Cleanup(func() { app.Close() })
	if err := app.NewLock("failtick:lock", &store.LockOptions{Lease: time.Minute, NoWatchdog: true}).Lock(t.Context()); err != nil {
		t.Fatal(err)
	}
	sm := New(Config{Inspector: inspect.New(rdb, nil), TickInterval: 20 * time.Millisecond,
		Events: events.NewLog(16, noSink{})})
	seen := make(recorder, 4096)
	sm.PublishTo(seen)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { sm.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	for start := time.After(10 * time.Second); ; {
		select {
		case sn := <-seen:
			if sn.RedisUp && len(sn.Locks) == 1 {
				goto started
			}
		case <-start:
			t.Fatal("the lock was not listed within 10 s")
		}
	}
started:
	failed := sm.TickStats().Failed
	// CLIENT PAUSE holds every other client's commands; the admin
	// connection's own PAUSE returns at once.
	if err := admin.Do(t.Context(), "CLIENT", "PAUSE", 1500, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	// An idle lock is read every few seconds, not every tick: ask for it
	// on the next one, which the pause holds.
	sm.touch.add("failtick:lock")
	for len(seen) > 0 { // what came before the pause
		<-seen
	}
	time.Sleep(2 * time.Second)
	if sm.TickStats().Failed == failed {
		t.Fatal("no tick failed during a pause past the tick's bound")
	}
	deadline := time.After(10 * time.Second)
	for up := false; !up; {
		select {
		case sn := <-seen:
			if !sn.RedisUp {
				t.Fatal("one failed tick published a snapshot with Redis down")
			}
			up = true
		case <-deadline:
			t.Fatal("no good snapshot within 10 s of the pause")
		}
	}

	// Paused long enough for two ticks to fail: Redis is down.
	if err := admin.Do(t.Context(), "CLIENT", "PAUSE", 5000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	deadline = time.After(10 * time.Second)
	for {
		select {
		case sn := <-seen:
			if !sn.RedisUp {
				_ = admin.Do(t.Context(), "CLIENT", "UNPAUSE").Err()
				return
			}
		case <-deadline:
			t.Fatal("two failed ticks did not say Redis is down")
		}
	}
}
