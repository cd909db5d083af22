package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// queueLen is the fair lock's queue length.
func queueLen(rdb *redis.Client, name string) int64 {
	return rdb.LLen(context.Background(), FairLockQueueKey(name)).Val()
}

// Three waiters that arrive one after another get the lock in that order,
// each woken on its own channel; the console lists them while they wait.
func TestFairOrder(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fair"
	holder := c.NewFairLock(name, nil)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	var waiters []*FairLock
	for i := range 3 {
		// Alternate Clients: order must hold across application instances.
		app := c
		if i%2 == 0 {
			app = New(rdb, nil)
		}
		// A long retry cap: only the wake-up on its own channel (or a
		// queue-freshness retry) brings a waiter back early.
		w := app.NewFairLock(name, &FairLockOptions{LockOptions: LockOptions{RetryCap: time.Minute}})
		waiters = append(waiters, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, w.HolderID())
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			if err := w.Unlock(ctx); err != nil {
				t.Error(err)
			}
		}()
		eventually(t, "the waiter is queued", func() bool { return queueLen(rdb, name) == int64(i+1) })
	}

	info, err := c.GetLock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != KindFairLock || info.WaitersTotal != 3 || len(info.Waiters) != 3 ||
		info.Holders[0].ID != holder.HolderID() || info.PTTL <= 0 {
		t.Fatalf("console sees %+v", info)
	}
	for i, w := range info.Waiters {
		if w.ID != waiters[i].HolderID() || w.RemainingMS <= 0 || w.Channel != UnlockChannel(name)+":"+w.ID {
			t.Fatalf("waiter %d = %+v, want %s", i, w, waiters[i].HolderID())
		}
	}
	if plan := info.ForceUnlockPlan(holder.HolderID()); plan.Channel != UnlockChannel(name)+":"+waiters[0].HolderID() {
		t.Errorf("plan wakes %q", plan.Channel)
	}

	ps := kindSubscribe(t, ctx, rdb, "redisson_lock__channel:*")
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	want := []string{waiters[0].HolderID(), waiters[1].HolderID(), waiters[2].HolderID()}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("order %v, want %v", order, want)
	}
	msgs := kindMessages(ps, 300*time.Millisecond)
	if len(msgs) != 3 {
		t.Fatalf("messages %v, want one per hand-over", msgs)
	}
	for i, m := range msgs {
		if m.Channel != UnlockChannel(name)+":"+want[i] || m.Payload != "0" {
			t.Fatalf("message %d = %s %q, want \"0\" on %s's channel", i, m.Channel, m.Payload, want[i])
		}
	}
	if n := rdb.Exists(ctx, name, FairLockQueueKey(name), FairLockTimeoutKey(name)).Val(); n != 0 {
		t.Fatalf("%d keys left behind", n)
	}
	if cnt := statsRecentSum(t, rdb, name); cnt.Acquired != 4 {
		t.Errorf("stats = %+v, want 4 acquired", cnt)
	}
}

// A free lock belongs to the head of the queue: TryLock by anyone else
// fails, the head takes it; re-entry works; a dead head is dropped once
// its deadline passes.
func TestFairQueueHeadAndStaleWaiter(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fair"
	holder := c.NewFairLock(name, &FairLockOptions{LockOptions: LockOptions{Lease: 300 * time.Millisecond, NoWatchdog: true}})
	head := New(rdb, nil).NewFairLock(name, &FairLockOptions{ThreadWaitTime: 100 * time.Millisecond})
	late := c.NewFairLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := head.attempt(ctx, true); ok || err != nil { // queue without waiting
		t.Fatalf("queueing attempt = %v, %v", ok, err)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var le *LockedError
	if err := late.TryLock(ctx); !errors.As(err, &le) || le.TTL <= 0 {
		t.Fatalf("TryLock past the head = %v, want LockedError", err)
	}
	if queueLen(rdb, name) != 1 {
		t.Fatal("TryLock queued")
	}
	for range 2 {
		if err := head.TryLock(ctx); err != nil {
			t.Fatalf("head: %v", err)
		}
	}
	if v := rdb.HGet(ctx, name, head.HolderID()).Val(); v != "2" || queueLen(rdb, name) != 0 {
		t.Fatalf("count %s, queue %d", v, queueLen(rdb, name))
	}
	for range 2 {
		if err := head.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// A waiter that queues and then dies: holder's lease (300 ms) plus its
	// thread wait time (100 ms) later it no longer blocks anyone.
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := head.attempt(ctx, true); ok || err != nil {
		t.Fatalf("queueing attempt = %v, %v", ok, err)
	}
	time.Sleep(700 * time.Millisecond)
	if err := late.TryLock(ctx); err != nil {
		t.Fatalf("after the dead waiter's deadline: %v", err)
	}
	if queueLen(rdb, name) != 0 {
		t.Fatal("dead waiter still queued")
	}
	if err := late.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A waiter whose ctx ends leaves the queue; a force-unlock by the console
// wakes the next waiter, which takes the lock; the old holder then gets
// ErrNotHeld and its watchdog stops.
func TestFairCancelAndForceUnlock(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fair"
	holder := c.NewFairLock(name, &FairLockOptions{LockOptions: LockOptions{Lease: 300 * time.Millisecond}})
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	quitter := New(rdb, nil).NewFairLock(name, nil)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := quitter.Lock(short); !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock = %v", err)
	}
	if queueLen(rdb, name) != 0 || rdb.Exists(ctx, FairLockTimeoutKey(name)).Val() != 0 {
		t.Fatal("the waiter that gave up is still queued")
	}

	time.Sleep(time.Second) // three leases: the watchdog must renew
	next := New(rdb, nil).NewFairLock(name, &FairLockOptions{LockOptions: LockOptions{RetryCap: time.Minute}})
	done := make(chan error, 1)
	go func() { done <- next.Lock(ctx) }()
	eventually(t, "the waiter is queued", func() bool { return queueLen(rdb, name) == 1 })
	if err := c.ForceUnlock(ctx, name, holder.HolderID()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("force-unlock did not wake the next waiter")
	}
	if err := holder.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("old holder unlock = %v, want ErrNotHeld", err)
	}
	eventually(t, "the old holder's watchdog stops", func() bool {
		return !holder.inner.shared.renewing(name, holder.HolderID())
	})
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if cnt := statsRecentSum(t, rdb, name); cnt.Acquired != 2 || cnt.Rejected < 2 {
		t.Errorf("stats = %+v, want 2 acquired and the waiters' attempts rejected", cnt)
	}
}

func TestFairWrongKindAndInvalid(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	rdb.Set(ctx, p+"str", "x", time.Minute)
	if err := c.NewFairLock(p+"str", nil).TryLock(ctx); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("TryLock on a string = %v", err)
	}
	if err := c.NewFairLock(p+"x", &FairLockOptions{ThreadWaitTime: time.Microsecond}).Lock(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("tiny thread wait = %v", err)
	}
	if err := c.NewFairLock("", nil).Unlock(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty name = %v", err)
	}
	if err := c.NewFairLock(p+"none", nil).Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock of nothing = %v", err)
	}
}

// Waiters that keep asking keep their places however long the holder's
// watchdog keeps the lock, although each place alone would time out after
// the holder's lease plus the thread wait time.
func TestFairLiveWaitersKeepTheirPlace(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fair"
	holder := c.NewFairLock(name, &FairLockOptions{LockOptions: LockOptions{Lease: 300 * time.Millisecond}})
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var order []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	var ids []string
	for i := range 2 {
		w := New(rdb, nil).NewFairLock(name, &FairLockOptions{ThreadWaitTime: 100 * time.Millisecond})
		ids = append(ids, w.HolderID())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, w.HolderID())
			mu.Unlock()
			if err := w.Unlock(ctx); err != nil {
				t.Error(err)
			}
		}()
		eventually(t, "the waiter is queued", func() bool { return queueLen(rdb, name) == int64(i+1) })
	}
	time.Sleep(time.Second) // 2x (lease + thread wait)
	info, err := c.GetLock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Waiters) != 2 || info.Waiters[0].ID != ids[0] || info.Waiters[1].ID != ids[1] ||
		info.Waiters[0].RemainingMS <= 0 || info.Waiters[1].RemainingMS <= 0 {
		t.Fatalf("waiters %+v, want both live and in arrival order", info.Waiters)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(order) != 2 || order[0] != ids[0] || order[1] != ids[1] {
		t.Fatalf("order %v, want %v", order, ids)
	}
}

// Each attempt of a queued waiter pushes its deadline to at least the
// holder's (renewed) expiry plus the thread wait time; an attempt that does
// not queue leaves it alone.
func TestFairAttemptRefreshesDeadline(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fair"
	holder := c.NewFairLock(name, nil)
	w := New(rdb, nil).NewFairLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := func() float64 { return rdb.ZScore(ctx, FairLockTimeoutKey(name), w.HolderID()).Val() }
	if _, ok, err := w.attempt(ctx, true); ok || err != nil {
		t.Fatalf("queueing attempt = %v, %v", ok, err)
	}
	first := deadline()
	time.Sleep(20 * time.Millisecond)
	if err := w.TryLock(ctx); !errors.Is(err, ErrNotObtained) || deadline() != first {
		t.Fatalf("TryLock = %v, deadline %v -> %v", err, first, deadline())
	}
	if err := holder.TryLock(ctx); err != nil { // re-entry restarts the lease, as a renewal does
		t.Fatal(err)
	}
	if _, ok, err := w.attempt(ctx, true); ok || err != nil || deadline() <= first {
		t.Fatalf("second queueing attempt = %v, %v; deadline %v -> %v", ok, err, first, deadline())
	}
	if queueLen(rdb, name) != 1 {
		t.Fatal("queued twice")
	}
	w.withdraw(ctx)
	if queueLen(rdb, name) != 0 || rdb.Exists(ctx, FairLockTimeoutKey(name)).Val() != 0 {
		t.Fatal("withdraw left the waiter queued")
	}
	for range 2 {
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
