package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// A hand-off without replica acknowledgement is the whole grant
// (lock_wait.go): the waiter's entry carries its own lease and the waiter
// returns on the message. These tests cover that path and the ways a
// hand-off can still go wrong: a lost message, a waiter that gives up.

// heldLock is a lock name held by a handle of its own Client.
func heldLock(t *testing.T) (context.Context, *redis.Client, string, *Lock) {
	t.Helper()
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	holder := c.NewLock(name, nil)
	redistest.UnlockAtEnd(t, holder)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx, rdb, name, holder
}

// waiting is a handle on name of a new Client, and its Lock(ctx) running.
func waiting(t *testing.T, ctx context.Context, name string, opts *LockOptions) (*Lock, chan error) {
	t.Helper()
	c, _ := lockTestClient(t)
	l := c.NewLock(name, opts)
	redistest.UnlockAtEnd(t, l)
	got := make(chan error, 1)
	go func() { got <- l.Lock(ctx) }()
	return l, got
}

// queuedEntries waits until name has n waiter entries and returns them.
func queuedEntries(t *testing.T, ctx context.Context, rdb *redis.Client, name string, n int) map[string]string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		entries := rdb.HGetAll(ctx, wire.LockEntriesKey(name)).Val()
		delete(entries, "=")
		if len(entries) == n && rdb.ZCard(ctx, wire.LockQueueKey(name)).Val() == int64(n) {
			return entries
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters queued, want %d: %v", len(entries), n, entries)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// entryLease reads the lease field of a waiter entry, in store/inspect's
// format "<deadline ms> <lease ms> <holder>".
func entryLease(t *testing.T, entry string) time.Duration {
	t.Helper()
	var deadline, lease int64
	var holder string
	if _, err := fmt.Sscanf(entry, "%d %d %s", &deadline, &lease, &holder); err != nil {
		t.Fatalf("entry %q: %v", entry, err)
	}
	return time.Duration(lease) * time.Millisecond
}

// deafen makes l's Client lose every message of l's channels from now on.
func deafen(l *Lock) {
	h := &l.shared.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lose = func(channel, _ string) bool { return channel == l.wakeCh || channel == l.unlockCh }
}

// The entry of a waiter whose grants need no replica carries its own lease
// (here a NoWatchdog minute), and the release sets it: Lock returns with
// that lease in Redis. Before, the entry carried a claim of at most
// handoffLease, which a confirmation round trip then replaced.
func TestLockHandoffSetsWaitersOwnLease(t *testing.T) {
	ctx, rdb, name, holder := heldLock(t)
	waiter, got := waiting(t, ctx, name, &LockOptions{Lease: time.Minute, NoWatchdog: true, RetryInterval: time.Minute})
	for _, entry := range queuedEntries(t, ctx, rdb, name, 1) {
		if lease := entryLease(t, entry); lease != time.Minute {
			t.Fatalf("queued entry %q carries %v, want the waiter's own lease %v", entry, lease, time.Minute)
		}
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if pttl := rdb.PTTL(ctx, name).Val(); pttl <= handoffLease {
		t.Fatalf("NoWatchdog lease after the hand-off: PTTL = %v, want its own minute", pttl)
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after the hand-off: %v", err)
	}
}

// A hand-off whose message never arrives (nor the "0" behind it) costs the
// waiter one retry interval, not the holder's lease: its next timed attempt
// finds the mark "=" naming its token and returns held. The release has
// already set the waiter's full lease, so the hold is safe meanwhile.
func TestLockHandoffLostMessage(t *testing.T) {
	ctx, rdb, name, holder := heldLock(t)
	waiter, got := waiting(t, ctx, name, nil) // RetryInterval: the default
	queuedEntries(t, ctx, rdb, name, 1)
	deafen(waiter)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.HGet(ctx, name, waiter.HolderID()).Val(); n != "1" {
		t.Fatalf("lock after the hand-off: %v, want the waiter at count 1", rdb.HGetAll(ctx, name).Val())
	}
	if pttl := rdb.PTTL(ctx, name).Val(); pttl <= handoffLease {
		t.Fatalf("lease the hand-off set: PTTL = %v, want the waiter's own %v", pttl, DefaultLockLease)
	}
	// Its next attempt comes within min(RetryInterval, waitEntryTTL/3) = 1 s;
	// sleeping on the holder's PTTL would take 30 s.
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter whose hand-off message was lost still waits after 10 s")
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after the lost message: %v", err)
	}
	for _, key := range []string{wire.HeldKey(name), wire.LockEntriesKey(name)} {
		if mark, err := rdb.HGet(ctx, key, "=").Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("hand-off mark left in %s after the hold ended: %q (%v)", key, mark, err)
		}
	}
	if n := rdb.Exists(ctx, name).Val(); n != 0 {
		t.Errorf("lock still exists after its only level was released")
	}
}

// A waiter that gives up after the lock was handed to it, but before it
// heard of it, withdraws: the hold it was given is released and handed on
// to the next waiter, and its Lock reports not obtained.
func TestLockHandoffWithdrawAfterHandOff(t *testing.T) {
	ctx, rdb, name, holder := heldLock(t)
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	quitter, gaveUp := waiting(t, qctx, name, nil)
	queuedEntries(t, ctx, rdb, name, 1)
	next, got := waiting(t, ctx, name, nil)
	queuedEntries(t, ctx, rdb, name, 2)

	deafen(quitter)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.HGet(ctx, name, quitter.HolderID()).Val(); n != "1" {
		t.Fatalf("lock after the hand-off: %v, want the first waiter", rdb.HGetAll(ctx, name).Val())
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock of the waiter that gave up = %v, want ErrNotObtained and context.Canceled", err)
	}
	if err := <-got; err != nil {
		t.Fatalf("next waiter: %v", err)
	}
	heldBySole(t, rdb, name, next.HolderID())
	if err := quitter.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("Unlock by the waiter that gave up = %v, want ErrNotHeld", err)
	}
}
