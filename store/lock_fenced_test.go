package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// Holders waiting in Lock take turns, one at a time, and each turn's token
// is larger than every earlier one.
func TestFencedMutualExclusion(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fenced"
	// An existing counter is continued, not re-seeded: tokens count from 1.
	rdb.Set(ctx, wire.FencingTokenKey(name), 0, 0)
	var inside, overlaps atomic.Int64
	var mu sync.Mutex
	var last int64
	var wg sync.WaitGroup
	for i := range 4 {
		app := c
		if i%2 == 1 {
			app = New(rdb, nil)
		}
		l := app.NewFencedLock(name, &LockOptions{RetryInterval: 50 * time.Millisecond})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if err := l.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				mu.Lock()
				if l.Token() <= last {
					t.Errorf("token %d after %d", l.Token(), last)
				}
				last = l.Token()
				mu.Unlock()
				time.Sleep(time.Millisecond)
				inside.Add(-1)
				if err := l.Unlock(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Fatalf("%d overlapping holds", overlaps.Load())
	}
	if last != 40 {
		t.Errorf("last token %d, want 40 (one per acquisition)", last)
	}
}

// A waiter is woken by the release message, long before its retry cap.
func TestFencedLockWaits(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fenced"
	a := c.NewFencedLock(name, &LockOptions{Lease: 900 * time.Millisecond})
	b := New(rdb, nil).NewFencedLock(name, &LockOptions{RetryInterval: time.Minute})
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Lock(ctx) }()
	redistest.WaitRenewed(t, rdb, name, 2) // a's watchdog renews while b waits
	select {
	case err := <-done:
		t.Fatalf("waiter got in while held: %v", err)
	default:
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil || b.Token() != a.Token()+1 {
			t.Fatalf("waiter: token %d, %v", b.Token(), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not woken by the release")
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := a.Lock(short); !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock while held = %v", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A token key that is not a counter fails the acquire before the lock is
// taken.
func TestFencedWrongKind(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fenced"
	rdb.Set(ctx, wire.FencingTokenKey(name), "not a number", time.Minute)
	l := c.NewFencedLock(name, nil)
	if err := l.TryLock(ctx); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("TryLock = %v, want ErrWrongKind", err)
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("lock taken despite the failure")
	}
	rdb.Set(ctx, p+"str", "x", time.Minute)
	if err := c.NewFencedLock(p+"str", nil).TryLock(ctx); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("TryLock on a string = %v", err)
	}
	if _, err := c.NewFencedLock(p+"x", &LockOptions{Lease: -1}).CurrentToken(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid options = %v", err)
	}
}

// A missing token key is seeded from Redis TIME in microseconds, so tokens
// keep growing when Redis restarts without persistence and loses the key:
// a counter restarted at 1 would hand out tokens below those already used.
func TestFencedTokenGrowsAcrossRestart(t *testing.T) {
	s := redistest.StartT(t)
	rdb := redistest.NewClient(t, s)
	ctx := t.Context()
	name := redistest.Prefix(t) + "fenced"
	c := New(rdb, nil)
	l := c.NewFencedLock(name, &LockOptions{NoWatchdog: true})

	before, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	first := l.Token()
	if first <= before.UnixMicro() {
		t.Fatalf("first token %d, want above Redis TIME %d µs", first, before.UnixMicro())
	}
	if err := l.TryLock(ctx); err != nil || l.Token() != first+1 {
		t.Fatalf("re-entry: token %d, %v; want %d", l.Token(), err, first+1)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	// The pooled connection died with the server; a PING (go-redis may
	// re-send it) gets a fresh one, so the script call is not the one that
	// finds the dead connection.
	for range 3 {
		if rdb.Ping(ctx).Err() == nil {
			break
		}
	}
	if n := rdb.Exists(ctx, wire.FencingTokenKey(name)).Val(); n != 0 {
		t.Fatal("the restart kept the token key: this test needs a server without persistence")
	}
	l2 := New(rdb, nil).NewFencedLock(name, &LockOptions{NoWatchdog: true})
	if err := l2.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if l2.Token() <= first+1 {
		t.Fatalf("token after restart %d, want above %d", l2.Token(), first+1)
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
