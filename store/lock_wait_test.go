package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

func TestLockWaiterWakesOnUnlockMessage(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)

	holder := c.NewLock(name, &LockOptions{Lease: 10 * time.Second})
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	// The cap is far above the lease, so only the message can wake it early.
	waiterClient, _ := lockTestClient(t)
	waiter := waiterClient.NewLock(name, &LockOptions{RetryInterval: time.Minute})
	redistest.UnlockAtEnd(t, waiter)
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(ctx) }()
	redistest.WaitForSubscriber(t, rdb, wire.UnlockChannel(name))
	time.Sleep(100 * time.Millisecond)
	released := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(released); d > 2*time.Second {
			t.Fatalf("waiter took %v after the unlock (lease left was ~10s): it polled", d)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("waiter did not wake on the unlock message")
	}
}

func TestLockWaitLeavesNoSubscriptions(t *testing.T) {
	const workers, perWorker = 10, 500 // 5,000 wait-and-acquire operations
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	channel := wire.UnlockChannel(name)
	ctx := redistest.Context(t, 90*time.Second)
	hub := &sharedFor(c).hub
	waitsBefore, _ := hubCounts(hub)

	locks := make([]*Lock, workers)
	for i := range locks {
		locks[i] = c.NewLock(name, nil)
	}
	if _, n := contend(t, ctx, locks, perWorker); n != 0 {
		t.Fatalf("%d overlapping holds", n)
	}
	waits, subscribes := hubCounts(hub)
	if waits -= waitsBefore; waits < 500 {
		t.Fatalf("only %d of %d operations waited: the wait path was barely exercised", waits, workers*perWorker)
	}
	t.Logf("%d operations waited; %d SUBSCRIBEs in all", waits, subscribes)

	hub.mu.Lock()
	waiters, channels := hub.waiters, len(hub.channels)
	hub.mu.Unlock()
	if waiters != 0 || channels != 0 {
		t.Fatalf("hub still tracks %d waiters on %d channels", waiters, channels)
	}
	// UNSUBSCRIBE is written by the last waiter on its way out; give Redis
	// a moment to process it, then demand zero.
	deadline := time.Now().Add(5 * time.Second)
	for {
		numsub := rdb.PubSubNumSub(ctx, channel).Val()[channel]
		numpat := rdb.PubSubNumPat(ctx).Val()
		if numsub == 0 && numpat == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PUBSUB NUMSUB %s = %d, NUMPAT = %d; want 0 and 0", channel, numsub, numpat)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func hubCounts(h *waitHub) (waits, subscribes int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waits, h.subscribes
}

func TestLockWaitSharesOneConnection(t *testing.T) {
	c, rdb := lockTestClient(t)
	prefix := redistest.Prefix(t)
	ctx := redistest.Context(t, 30*time.Second)
	hub := &sharedFor(c).hub
	hub.mu.Lock()
	hub.idleClose = 50 * time.Millisecond
	hub.mu.Unlock()

	// Two held locks, three waiters on each.
	other, _ := lockTestClient(t)
	var holders []*Lock
	for _, n := range []string{"a", "b"} {
		h := other.NewLock(prefix+n, nil)
		if err := h.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		holders = append(holders, h)
	}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		l := c.NewLock(holders[i%2].Name(), &LockOptions{RetryInterval: time.Minute})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			if err := l.Unlock(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		hub.mu.Lock()
		w := hub.waiters
		hub.mu.Unlock()
		if w == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 6 waiters registered", w)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, h := range holders {
		ch := wire.UnlockChannel(h.Name())
		if n := rdb.PubSubNumSub(ctx, ch).Val()[ch]; n != 1 {
			t.Errorf("NUMSUB %s = %d with 3 waiters, want 1 shared subscription", ch, n)
		}
	}
	for _, h := range holders {
		if err := h.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()

	// With nobody waiting the connection goes away after idleClose.
	deadline = time.Now().Add(5 * time.Second)
	for {
		hub.mu.Lock()
		open := hub.ps != nil
		hub.mu.Unlock()
		if !open {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("idle PubSub connection was never closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// And the next waiter opens a fresh one.
	h := other.NewLock(prefix+"a", nil)
	if err := h.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l := c.NewLock(prefix+"a", &LockOptions{RetryInterval: time.Minute})
		err := l.Lock(ctx)
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	redistest.WaitForSubscriber(t, rdb, wire.UnlockChannel(prefix+"a"))
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter on a reopened connection never woke")
	}
}

// The confirmation bookkeeping: a late confirmation of an earlier SUBSCRIBE
// must not mark a newer one ready.
func TestLockWaitHubConfirmationOrder(t *testing.T) {
	h := &waitHub{channels: map[string]*channelWaiters{}, pending: map[string]int{}}
	cw := &channelWaiters{unlock: "ch", ready: make(chan struct{}), members: map[*unlockWaiter]struct{}{}}
	h.channels["ch"] = cw
	h.pending["ch"] = 2 // subscribe, unsubscribe, subscribe again
	h.confirmed("ch")
	select {
	case <-cw.ready:
		t.Fatal("ready after the first of two confirmations")
	default:
	}
	h.confirmed("ch")
	select {
	case <-cw.ready:
	default:
		t.Fatal("not ready after the last confirmation")
	}
	h.confirmed("ch") // a resubscribe after a redial: harmless
	w := &unlockWaiter{hub: h, group: cw, C: make(chan struct{}, 1), H: make(chan struct{}, 1)}
	cw.members[w] = struct{}{}
	h.deliver("ch", "0")
	h.deliver("ch", "0") // coalesced, must not block
	if len(w.C) != 1 {
		t.Fatalf("waiter has %d pending wake-ups, want 1", len(w.C))
	}
}

func TestLockWaitSubscribeFailure(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c := New(rdb, nil)
	hub := &sharedFor(c).hub
	ctx := redistest.Context(t, 10*time.Second)
	_, err := hub.join(ctx, "t", "redisson_lock__channel:{x}", "lw:{x}:handoff:x")
	if err == nil {
		t.Fatal("join against a closed port succeeded")
	}
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if hub.waiters != 0 || len(hub.channels) != 0 || len(hub.pending) != 0 {
		t.Fatalf("failed join left state: %d waiters, %v, %v", hub.waiters, hub.channels, hub.pending)
	}
	if errors.Is(err, ErrInvalid) {
		t.Fatal("connection failure reported as invalid input")
	}
}

// Waiters that arrive further apart than lock_acquire.lua's follow window
// (follow_us, 3 ms) get the lock in arrival order, across Clients, each
// straight from the release that hands it on.
func TestLockHandoffArrivalOrder(t *testing.T) {
	const waiters = 4
	holderClient, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	holder := holderClient.NewLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	clients := [2]*Client{}
	for i := range clients {
		clients[i], _ = lockTestClient(t)
	}
	order := make(chan int, waiters)
	errs := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		l := clients[i%2].NewLock(name, &LockOptions{RetryInterval: time.Minute})
		go func() {
			if err := l.Lock(ctx); err != nil {
				errs <- err
				return
			}
			order <- i
			if err := l.Unlock(ctx); err != nil {
				errs <- err
			}
		}()
		// Queue them one by one so arrival order is known.
		deadline := time.Now().Add(5 * time.Second)
		for rdb.ZCard(ctx, wire.LockQueueKey(name)).Val() != int64(i+1) {
			if time.Now().After(deadline) {
				t.Fatalf("waiter %d never queued", i)
			}
			time.Sleep(2 * time.Millisecond)
		}
		// Past the follow window: waiter i+2, of the same Client, must not
		// be placed right behind waiter i.
		time.Sleep(placeWindow + time.Millisecond)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < waiters; i++ {
		select {
		case got := <-order:
			if got != i {
				t.Fatalf("acquisition %d went to waiter %d, want arrival order", i, got)
			}
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(10 * time.Second):
			t.Fatalf("acquisition %d never came", i)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for rdb.Exists(ctx, name, wire.LockQueueKey(name), wire.LockEntriesKey(name)).Val() != 0 {
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the lock or its queue keys outlived the last release")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A queued entry whose waiter stopped refreshing it is skipped: the lock
// goes to the next live waiter, not to the dead one.
func TestLockHandoffSkipsExpiredWaiter(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	holder := c.NewLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	// A dead waiter queued first, its deadline already past.
	rdb.ZAdd(ctx, wire.LockQueueKey(name), redis.Z{Score: 1, Member: "dead"})
	rdb.HSet(ctx, wire.LockEntriesKey(name), "dead", "1 30000 dead-client:1")

	other, _ := lockTestClient(t)
	live := other.NewLock(name, &LockOptions{RetryInterval: time.Minute})
	redistest.UnlockAtEnd(t, live)
	got := make(chan error, 1)
	go func() { got <- live.Lock(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for rdb.ZCard(ctx, wire.LockQueueKey(name)).Val() != 2 {
		if time.Now().After(deadline) {
			t.Fatal("live waiter never queued")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("live waiter was not handed the lock")
	}
	heldBySole(t, rdb, name, live.HolderID())
	// The waiter holds its own lease (30 s), not a short claim, so a pause
	// of a few seconds right after the hand-off does not lose the lock.
	if pttl := rdb.PTTL(ctx, name).Val(); pttl <= handoffLease {
		t.Fatalf("lease after a hand-off: PTTL = %v, want above the claim's %v", pttl, handoffLease)
	}
}

// Two goroutines sharing a handle: one holds the lock, the other's queue
// entry expired (it was paused) and its next attempt finds the holder field
// present. That is a re-entry and must count, or the first Unlock frees the
// lock under the second: a script that took "entry gone, field present"
// for a hand-off would answer "taken" at count 1.
func TestLockSharedHandleReentryAfterExpiredEntry(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	l := c.NewLock(name, nil)
	redistest.UnlockAtEnd(t, l)
	if err := l.TryLock(ctx); err != nil { // goroutine 1
		t.Fatal(err)
	}
	// Goroutine 2 queued earlier; its entry is gone (expired, dropped).
	turn := &waitTurn{token: newWaitToken(), queued: true}
	if _, ok, err := l.tryAcquire(ctx, turn); err != nil || !ok {
		t.Fatalf("second goroutine's attempt: ok=%v err=%v, want a re-entry", ok, err)
	}
	if n, _ := rdb.HGet(ctx, name, l.HolderID()).Int64(); n != 2 {
		t.Fatalf("reentry count after two holds = %d, want 2", n)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.HGet(ctx, name, l.HolderID()).Int64(); n != 1 {
		t.Fatalf("after one Unlock the other goroutine's level is gone: count %d", n)
	}
	if err := c.NewLock(name, nil).TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("another owner's TryLock while one level is held: %v", err)
	}
}

// Many hand-offs under sustained contention leave the waiter entries hash
// holding the waiters that still wait and one hand-off mark, not one field
// per hand-off ever made (the hash's expiry is renewed by every newcomer,
// so such fields would only go once contention stops).
func TestLockHandoffsLeaveNoEntryBehind(t *testing.T) {
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 60*time.Second)
	const workers, rounds = 4, 25
	var (
		wg      sync.WaitGroup
		handoff atomic.Int64
		maxLen  atomic.Int64
	)
	rdb := redistest.Client(t)
	for w := range workers {
		c, _ := lockTestClient(t)
		l := c.NewLock(name, &LockOptions{Owner: fmt.Sprint("w", w)})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := l.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				if n := rdb.HLen(ctx, wire.LockEntriesKey(name)).Val(); n > maxLen.Load() {
					maxLen.Store(n)
				}
				handoff.Add(1)
				if err := l.Unlock(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	fields := rdb.HKeys(ctx, wire.LockEntriesKey(name)).Val()
	if len(fields) > 1 || (len(fields) == 1 && fields[0] != "=") {
		t.Errorf("after %d grants nobody waits, yet the entries hash holds %d fields: %v", handoff.Load(), len(fields), fields)
	}
	if m := maxLen.Load(); m > workers {
		t.Errorf("the entries hash reached %d fields with %d workers (at most %d waiters and the mark)", m, workers, workers)
	}
}

// contend has each of locks take and release its lock rounds times, each in
// a goroutine of its own, and counts the holds and those that overlapped
// another: a holder that finds someone inside, the yield widening the
// window a broken lock would leave.
func contend(t *testing.T, ctx context.Context, locks []*Lock, rounds int) (holds, overlaps int64) {
	t.Helper()
	var inside, held, overlapped atomic.Int64
	holdLoop(t, ctx, locks, rounds, func(context.Context, int) error {
		held.Add(1)
		if inside.Add(1) != 1 {
			overlapped.Add(1)
		}
		runtime.Gosched()
		inside.Add(-1)
		return nil
	})
	return held.Load(), overlapped.Load()
}
