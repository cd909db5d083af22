package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every acquisition takes a larger token, re-entries included; a refused
// attempt takes none; releases and a force-unlock never reset it; the
// console shows the token and the holder.
func TestFencedTokenIncreases(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fenced"
	a := c.NewFencedLock(name, nil)
	b := New(rdb, nil).NewFencedLock(name, nil)
	if err := a.TryLock(ctx); err != nil || a.Token() != 1 {
		t.Fatalf("first acquire: token %d, %v", a.Token(), err)
	}
	if err := a.TryLock(ctx); err != nil || a.Token() != 2 {
		t.Fatalf("re-entry: token %d, %v", a.Token(), err)
	}
	var le *LockedError
	if err := b.TryLock(ctx); !errors.As(err, &le) || le.TTL <= 0 || b.Token() != 0 {
		t.Fatalf("second holder = %v, token %d", err, b.Token())
	}
	if cur, err := b.CurrentToken(ctx); err != nil || cur != 2 {
		t.Fatalf("CurrentToken = %d, %v; a refused attempt must not take a token", cur, err)
	}
	if v := rdb.HGet(ctx, name, a.HolderID()).Val(); v != "2" {
		t.Fatalf("reentry count %q", v)
	}
	d, err := c.Discover(ctx, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != 1 || d.Locks[0].Kind != KindFencedLock || d.Locks[0].FencingToken != 2 ||
		d.Locks[0].Holders[0].ID != a.HolderID() || d.Locks[0].Holders[0].Count != 2 {
		t.Fatalf("console sees %+v", d.Locks)
	}

	ps := kindSubscribe(t, ctx, rdb, "redisson_lock__channel:*")
	for range 2 {
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	msgs := kindMessages(ps, time.Second)
	if len(msgs) != 1 || msgs[0].Channel != UnlockChannel(name) || msgs[0].Payload != "0" {
		t.Fatalf("release messages %v", msgs)
	}
	if rdb.Exists(ctx, name).Val() != 0 || rdb.Get(ctx, FencingTokenKey(name)).Val() != "2" {
		t.Fatal("release must delete the lock and keep the token")
	}
	if err := b.TryLock(ctx); err != nil || b.Token() != 3 {
		t.Fatalf("next holder: token %d, %v", b.Token(), err)
	}

	// The console breaks b's hold: the token stays, the next is larger.
	info, err := c.GetLock(ctx, name)
	if err != nil || info.FencingToken != 3 {
		t.Fatalf("GetLock = %+v, %v", info, err)
	}
	if plan := info.ForceUnlockPlan(b.HolderID()); len(plan.Keeps) != 1 || plan.Keeps[0] != FencingTokenKey(name) {
		t.Errorf("plan = %+v", plan)
	}
	if err := c.ForceUnlock(ctx, name, b.HolderID()); err != nil {
		t.Fatal(err)
	}
	if rdb.Get(ctx, FencingTokenKey(name)).Val() != "3" {
		t.Fatal("force-unlock touched the token")
	}
	if err := b.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock after force-unlock = %v", err)
	}
	if err := a.TryLock(ctx); err != nil || a.Token() != 4 {
		t.Fatalf("after force-unlock: token %d, %v", a.Token(), err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if cnt := statsRecentSum(t, rdb, name); cnt.Acquired != 4 || cnt.Rejected != 1 {
		t.Errorf("stats = %+v, want 4 acquired 1 rejected", cnt)
	}
}

// Holders waiting in Lock take turns, one at a time, and each turn's token
// is larger than every earlier one.
func TestFencedMutualExclusion(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fenced"
	var inside, overlaps atomic.Int64
	var mu sync.Mutex
	var last int64
	var wg sync.WaitGroup
	for i := range 4 {
		app := c
		if i%2 == 1 {
			app = New(rdb, nil)
		}
		l := app.NewFencedLock(name, &LockOptions{RetryCap: 50 * time.Millisecond})
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
	a := c.NewFencedLock(name, &LockOptions{Lease: 300 * time.Millisecond})
	b := New(rdb, nil).NewFencedLock(name, &LockOptions{RetryCap: time.Minute})
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Lock(ctx) }()
	time.Sleep(time.Second) // three of a's leases: its watchdog must renew
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
		if err != nil || b.Token() != 2 {
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
	rdb.Set(ctx, FencingTokenKey(name), "not a number", time.Minute)
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
