package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// Lost tells a holder that its hold ended without its Unlock. The tests
// assert what caused what (the signal before the next holder's grant,
// never after the handle's own release), not how fast.

// closed reports whether ch is closed now.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitClosed waits for ch with a deadline generous enough for a loaded
// machine, failing the test when it stays open.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: Lost still open", what)
	}
}

func TestLostFixedLeaseClosesBeforeTheNextHolderGetsIn(t *testing.T) {
	ctx, c, _, p := handleSetup(t)
	name := p + "fixed"
	first := c.NewLock(name, &LockOptions{Lease: 300 * time.Millisecond, NoWatchdog: true})
	if err := first.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	lost := first.Lost()
	work, cancel := first.LostContext(ctx)
	defer cancel()
	if closed(lost) || work.Err() != nil {
		t.Fatal("Lost closed while the lease runs")
	}

	// Another Client takes the lock as soon as Redis lets it go.
	second := New(c.Redis(), nil).NewLock(name, &LockOptions{RetryInterval: 10 * time.Millisecond})
	if err := second.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// By the time anyone else holds it, the first holder's signal says so:
	// asked now, it is closed without waiting for a timer.
	if !closed(first.Lost()) || !closed(lost) {
		t.Fatal("another client holds the lock, but the first holder's Lost is open")
	}
	<-work.Done()
	if cause := context.Cause(work); !errors.Is(cause, ErrLeaseLost) {
		t.Fatalf("LostContext cause = %v, want ErrLeaseLost", cause)
	}
	if !errors.Is(first.LostCause(), ErrLeaseLost) {
		t.Fatalf("LostCause = %v", first.LostCause())
	}
	// The late release is refused, as it always was.
	if err := first.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("late Unlock = %v, want ErrNotHeld", err)
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// A new hold of the first handle gets a signal of its own.
	if err := first.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if closed(first.Lost()) || first.LostCause() != nil {
		t.Fatal("a new hold starts lost")
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLostStaysOpenAfterTheHandlesOwnRelease(t *testing.T) {
	ctx, c, _, p := handleSetup(t)
	l := c.NewLock(p+"own", &LockOptions{Lease: 100 * time.Millisecond, NoWatchdog: true})
	lost := l.Lost() // asked before the grant: the next hold's
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.TryLock(ctx); err != nil { // a re-entry: the same hold
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Well past the lease: a released hold is not a lost one.
	time.Sleep(300 * time.Millisecond)
	if closed(lost) || closed(l.Lost()) || l.LostCause() != nil {
		t.Fatal("Lost closed after the handle released its own hold")
	}
}

func TestLostWatchdogFindsTheHoldGone(t *testing.T) {
	for _, how := range []string{"deleted", "taken over"} {
		t.Run(how, func(t *testing.T) {
			ctx, c, rdb, p := handleSetup(t)
			name := p + "wd"
			l := c.NewLock(name, &LockOptions{Lease: 300 * time.Millisecond})
			if err := l.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			lost := l.Lost()
			if how == "deleted" {
				rdb.Del(ctx, name) // a console force-unlock
			} else {
				rdb.Del(ctx, name)
				rdb.HSet(ctx, name, "00000000-0000-4000-8000-000000000000:other", 1)
				rdb.PExpire(ctx, name, 10*time.Second)
			}
			waitClosed(t, lost, "the watchdog's renewal found the hold "+how)
			if !errors.Is(l.LostCause(), ErrLeaseLost) {
				t.Fatalf("LostCause = %v", l.LostCause())
			}
			if err := l.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("Unlock = %v, want ErrNotHeld", err)
			}
		})
	}
}

func TestLostOfEveryKind(t *testing.T) {
	type held struct {
		lost   func() <-chan struct{}
		unlock func(context.Context) error
	}
	kinds := map[string]func(c *Client, name string) (held, error){
		"spin": func(c *Client, name string) (held, error) {
			s := c.NewSpinLock(name, &SpinLockOptions{Lease: 300 * time.Millisecond})
			return held{s.Lost, s.Unlock}, s.TryLock(t.Context())
		},
		"fenced": func(c *Client, name string) (held, error) {
			f := c.NewFencedLock(name, &LockOptions{Lease: 300 * time.Millisecond})
			return held{f.Lost, f.Unlock}, f.TryLock(t.Context())
		},
		"fair": func(c *Client, name string) (held, error) {
			f := c.NewFairLock(name, &FairLockOptions{Lease: 300 * time.Millisecond})
			return held{f.Lost, f.Unlock}, f.TryLock(t.Context())
		},
		"read": func(c *Client, name string) (held, error) {
			r := c.NewRWLock(name, &LockOptions{Lease: 300 * time.Millisecond}).Reader()
			return held{r.Lost, r.Unlock}, r.TryLock(t.Context())
		},
		"write": func(c *Client, name string) (held, error) {
			w := c.NewRWLock(name, &LockOptions{Lease: 300 * time.Millisecond}).Writer()
			return held{w.Lost, w.Unlock}, w.TryLock(t.Context())
		},
		"token": func(c *Client, name string) (held, error) {
			tl := c.NewTokenLock(name, &TokenLockOptions{Lease: 300 * time.Millisecond})
			return held{tl.Lost, tl.Unlock}, tl.TryLock(t.Context())
		},
	}
	for kind, take := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx, c, rdb, p := handleSetup(t)
			name := p + kind
			h, err := take(c, name)
			if err != nil {
				t.Fatal(err)
			}
			lost := h.lost()
			if closed(lost) {
				t.Fatal("lost at once")
			}
			// A console force-unlock (or an eviction): the key goes. The
			// renewal finds it gone; a token lock's lease timer runs out.
			rdb.Del(ctx, name)
			waitClosed(t, lost, kind)
			if err := h.unlock(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("Unlock = %v, want ErrNotHeld", err)
			}
		})
	}
}

// A hand-off sets the waiter's lease at a time the waiter does not know,
// later than its last attempt: a fixed lease counted from that attempt
// would say "lost" while the lock is still the waiter's. The watch asks
// Redis instead, and closes only once the lease really ends.
func TestLostAfterAHandOffCountsFromTheHandOff(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "handoff"
	holder := c.NewLock(name, nil)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	other := New(rdb, nil)
	waiter := other.NewLock(name, &LockOptions{Lease: 600 * time.Millisecond, NoWatchdog: true, RetryInterval: time.Second})
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	// The waiter queues, then waits longer than its own lease.
	for rdb.ZCard(ctx, wire.LockQueueKey(name)).Val() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(900 * time.Millisecond)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	lost := waiter.Lost()
	for !closed(lost) {
		pttl, err := rdb.PTTL(ctx, name).Result()
		if err != nil {
			t.Fatal(err)
		}
		mine, _ := rdb.HExists(ctx, name, waiter.HolderID()).Result()
		// Closing early is allowed by a round trip; not by most of a lease.
		if closed(lost) && mine && pttl > 200*time.Millisecond {
			t.Fatalf("Lost closed with %v of the handed-off lease left", pttl)
		}
		if !mine {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	waitClosed(t, lost, "the handed-off lease ran out")
	// Lost may close a reply's delay before Redis expires the hold (it
	// counts from when the lease was read); the late Unlock is checked
	// once the hold is gone.
	redistest.Eventually(t, "the handed-off hold expired in Redis", func() bool {
		return !rdb.HExists(ctx, name, waiter.HolderID()).Val()
	})
	if err := waiter.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Unlock = %v, want ErrNotHeld", err)
	}
}

// The check runs on the watch's timer, so it must not be mistaken for a
// loss when Redis simply answers "still yours".
func TestLostCheckKeepsARunningHold(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "check"
	l := c.NewLock(name, &LockOptions{Lease: time.Second, NoWatchdog: true})
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	// As if granted by a hand-off whose time is known from below only.
	l.watch.granted(ctx, time.Now().Add(-time.Millisecond), pttlCheck(rdb, name, l.HolderID()))
	lost := l.Lost()
	time.Sleep(200 * time.Millisecond)
	if closed(lost) {
		t.Fatalf("Lost closed while Redis holds the lock for this holder: %v", l.LostCause())
	}
	rdb.Del(ctx, name)
	waitClosed(t, lost, "the lock was deleted")
	if err := l.Unlock(ctx); !errors.Is(err, ErrNotHeld) && !errors.Is(err, redis.Nil) {
		t.Fatalf("Unlock = %v", err)
	}
}
