package live

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/events"
)

type noSink struct{}

func (noSink) Logged(events.Entry) {}

// blocker is an observer stuck on its first snapshot until released.
type blocker struct {
	got     chan *Snapshot
	release chan struct{}
}

func (b *blocker) Observe(sn *Snapshot) {
	select {
	case b.got <- sn:
	default: // the test reads only the first two
	}
	<-b.release
}

// recorder hands on every snapshot it sees.
type recorder chan *Snapshot

func (r recorder) Observe(sn *Snapshot) {
	select {
	case r <- sn:
	default:
	}
}

// An observer that blocks (here on purpose; the history's feed when a
// snapshot holds many objects) holds up neither the ticks nor the
// observers after it once detached, and once free it is handed the newest
// snapshot, the ones it missed counted as skipped. Observers run inline
// on the sampler's goroutine, so the same blocker given to PublishTo as
// it is stops every tick after the first.
func TestDetachedObserverDoesNotHoldTheTicks(t *testing.T) {
	srv := redistest.StartT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	sm := New(Config{Inspector: inspect.New(rdb, nil), TickInterval: 10 * time.Millisecond,
		Events: events.NewLog(16, noSink{})})
	slow := &blocker{got: make(chan *Snapshot, 2), release: make(chan struct{})}
	after := make(recorder, 64)
	d := Detach(slow)
	sm.PublishTo(d, after)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{}, 2)
	go func() { sm.Run(ctx); done <- struct{}{} }()
	go func() { d.Run(ctx); done <- struct{}{} }()
	var freed sync.Once
	free := func() { freed.Do(func() { close(slow.release) }) }
	t.Cleanup(func() {
		free() // a failing run stops too
		cancel()
		<-done
		<-done
	})

	first := <-slow.got // the observer is now stuck in its first snapshot
	var last *Snapshot
	for range 5 { // ticks go on, and the observers after it see them
		select {
		case last = <-after:
		case <-time.After(10 * time.Second):
			t.Fatal("no tick reached the observer after the stuck one in 10 s")
		}
	}
	free()
	next := <-slow.got
	if !next.Taken.After(first.Taken) || next.Taken.Before(last.Taken) {
		t.Errorf("once free the observer got the snapshot of %v; it was stuck in %v, the newest seen after it was %v",
			next.Taken, first.Taken, last.Taken)
	}
	if d.Skipped() == 0 {
		t.Error("the snapshots it missed were not counted")
	}
}
