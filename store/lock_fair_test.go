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

// queueLen is the fair lock's queue length.
func queueLen(rdb *redis.Client, name string) int64 {
	return rdb.LLen(context.Background(), wire.FairLockQueueKey(name)).Val()
}

// A free lock belongs to the head of the queue: TryLock by anyone else
// fails, the head takes it; re-entry works; a dead head is dropped once
// its deadline passes.
func TestFairQueueHeadAndStaleWaiter(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fair"
	holder := c.NewFairLock(name, &LockOptions{Lease: 300 * time.Millisecond, NoWatchdog: true})
	head := New(rdb, nil).NewFairLock(name, &LockOptions{ThreadWaitTime: 100 * time.Millisecond})
	late := c.NewFairLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := head.attempt(ctx, true, nil); ok || err != nil { // queue without waiting
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
	if _, ok, err := head.attempt(ctx, true, nil); ok || err != nil {
		t.Fatalf("queueing attempt = %v, %v", ok, err)
	}
	deadline := rdb.ZScore(ctx, wire.FairLockTimeoutKey(name), head.HolderID()).Val()
	redistest.Eventually(t, "the dead waiter's deadline passes", func() bool {
		return float64(redistest.NowMS(t, rdb)) > deadline
	})
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

func TestFairWrongKindAndInvalid(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	rdb.Set(ctx, p+"str", "x", time.Minute)
	if err := c.NewFairLock(p+"str", nil).TryLock(ctx); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("TryLock on a string = %v", err)
	}
	if err := c.NewFairLock(p+"x", &LockOptions{ThreadWaitTime: time.Microsecond}).Lock(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("tiny thread wait = %v", err)
	}
	if err := c.NewFairLock("", nil).Unlock(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty name = %v", err)
	}
	if err := c.NewFairLock(p+"none", nil).Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock of nothing = %v", err)
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
	deadline := func() float64 { return rdb.ZScore(ctx, wire.FairLockTimeoutKey(name), w.HolderID()).Val() }
	if _, ok, err := w.attempt(ctx, true, nil); ok || err != nil {
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
	if _, ok, err := w.attempt(ctx, true, nil); ok || err != nil || deadline() <= first {
		t.Fatalf("second queueing attempt = %v, %v; deadline %v -> %v", ok, err, first, deadline())
	}
	if queueLen(rdb, name) != 1 {
		t.Fatal("queued twice")
	}
	w.withdraw(ctx)
	if queueLen(rdb, name) != 0 || rdb.Exists(ctx, wire.FairLockTimeoutKey(name)).Val() != 0 {
		t.Fatal("withdraw left the waiter queued")
	}
	for range 2 {
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A waiter that gives up moves the deadlines behind it one thread wait
// time earlier, as Redisson's removal does, so a Redisson waiter queued
// behind it is not kept alive a wait time longer than Redisson would.
func TestFairWithdrawShiftsLaterDeadlines(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "fair"
	holder := c.NewFairLock(name, nil)
	const wait = 10 * time.Second
	w := New(rdb, nil).NewFairLock(name, &LockOptions{ThreadWaitTime: wait})
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := w.attempt(ctx, true, nil); ok || err != nil {
		t.Fatalf("queueing attempt = %v, %v", ok, err)
	}
	// A Redisson client queued behind it, its deadline chained one wait on.
	const behind = "0badc0de-0000-4000-8000-00000000000b:9"
	mine := rdb.ZScore(ctx, wire.FairLockTimeoutKey(name), w.HolderID()).Val()
	rdb.RPush(ctx, wire.FairLockQueueKey(name), behind)
	rdb.ZAdd(ctx, wire.FairLockTimeoutKey(name), redis.Z{Score: mine + float64(wait.Milliseconds()), Member: behind})
	w.withdraw(ctx)
	if got := rdb.ZScore(ctx, wire.FairLockTimeoutKey(name), behind).Val(); got != mine {
		t.Fatalf("deadline behind the withdrawn waiter = %v, want %v (one wait earlier)", got, mine)
	}
	if got := rdb.LRange(ctx, wire.FairLockQueueKey(name), 0, -1).Val(); len(got) != 1 || got[0] != behind {
		t.Fatalf("queue = %q", got)
	}
	rdb.Del(ctx, wire.FairLockQueueKey(name), wire.FairLockTimeoutKey(name))
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
