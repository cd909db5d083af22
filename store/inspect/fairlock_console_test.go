package inspect

// These take a lock with the application client (package store) and check
// what the console reads of it or does to it.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// A waiter whose ctx ends leaves the queue; a force-unlock by the console
// wakes the next waiter, which takes the lock; the old holder then gets
// store.ErrNotHeld and its watchdog stops.
func TestFairCancelAndForceUnlock(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "fair"
	holder := c.NewFairLock(name, &store.LockOptions{Lease: 900 * time.Millisecond})
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	quitter := store.New(rdb, nil).NewFairLock(name, nil)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := quitter.Lock(short); !errors.Is(err, store.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("store.Lock = %v", err)
	}
	if queueLen(rdb, name) != 0 || rdb.Exists(ctx, wire.FairLockTimeoutKey(name)).Val() != 0 {
		t.Fatal("the waiter that gave up is still queued")
	}

	redistest.WaitRenewed(t, rdb, name, 2) // the watchdog renews
	next := store.New(rdb, nil).NewFairLock(name, &store.LockOptions{RetryInterval: time.Minute})
	done := make(chan error, 1)
	go func() { done <- next.Lock(ctx) }()
	redistest.Eventually(t, "the waiter is queued", func() bool { return queueLen(rdb, name) == 1 })
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
	if err := holder.Unlock(ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("old holder unlock = %v, want store.ErrNotHeld", err)
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if cnt := redistest.StatsTotal(t, rdb, redistest.StatsKey(name)); cnt.Acquired != 2 || cnt.Rejected < 2 {
		t.Errorf("stats = %+v, want 2 acquired and the waiters' attempts rejected", cnt)
	}
}

// Waiters that keep asking keep their places however long the holder's
// watchdog keeps the lock, although each place alone would time out after
// the holder's lease plus the thread wait time.
func TestFairLiveWaitersKeepTheirPlace(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "fair"
	// Renewed every 200 ms: a late renewal on a loaded machine has 400 ms.
	holder := c.NewFairLock(name, &store.LockOptions{Lease: 600 * time.Millisecond})
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var order []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	var ids []string
	for i := range 2 {
		w := store.New(rdb, nil).NewFairLock(name, &store.LockOptions{ThreadWaitTime: 100 * time.Millisecond})
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
		redistest.Eventually(t, "the waiter is queued", func() bool { return queueLen(rdb, name) == int64(i+1) })
	}
	// Each place's first deadline (lease + thread wait after it queued)
	// passes; asking again keeps moving it.
	first := rdb.ZRangeWithScores(ctx, wire.FairLockTimeoutKey(name), 0, -1).Val()
	if len(first) != 2 {
		t.Fatalf("deadlines %v, want one per waiter", first)
	}
	redistest.Eventually(t, "both waiters' first deadlines pass", func() bool {
		return float64(redistest.NowMS(t, rdb)) > max(first[0].Score, first[1].Score)
	})
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

// Three waiters that arrive one after another get the lock in that order,
// each woken on its own channel; the console lists them while they wait.
func TestFairOrder(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "fair"
	holder := c.NewFairLock(name, nil)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	var waiters []*store.FairLock
	for i := range 3 {
		// Alternate Clients: order must hold across application instances.
		app := c
		if i%2 == 0 {
			app = newPair(t, rdb)
		}
		// A long retry cap: only the wake-up on its own channel (or a
		// queue-freshness retry) brings a waiter back early.
		w := app.NewFairLock(name, &store.LockOptions{RetryInterval: time.Minute})
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
		redistest.Eventually(t, "the waiter is queued", func() bool { return queueLen(rdb, name) == int64(i+1) })
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
		if w.ID != waiters[i].HolderID() || w.RemainingMS <= 0 || w.Channel != wire.UnlockChannel(name)+":"+w.ID {
			t.Fatalf("waiter %d = %+v, want %s", i, w, waiters[i].HolderID())
		}
	}
	if plan := info.ForceUnlockPlan(holder.HolderID()); plan.Channel != wire.UnlockChannel(name)+":"+waiters[0].HolderID() {
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
		if m.Channel != wire.UnlockChannel(name)+":"+want[i] || m.Payload != "0" {
			t.Fatalf("message %d = %s %q, want \"0\" on %s's channel", i, m.Channel, m.Payload, want[i])
		}
	}
	if n := rdb.Exists(ctx, name, wire.FairLockQueueKey(name), wire.FairLockTimeoutKey(name)).Val(); n != 0 {
		t.Fatalf("%d keys left behind", n)
	}
	if cnt := redistest.StatsTotal(t, rdb, redistest.StatsKey(name)); cnt.Acquired != 4 {
		t.Errorf("stats = %+v, want 4 acquired", cnt)
	}
}
