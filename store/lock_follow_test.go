package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// waitFollowing waits until n of c's waiters on name follow a train.
func waitFollowing(t *testing.T, c *Client, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for following(c, name) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters follow a train on %s, want %d", following(c, name), name, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// trainOf is a lock held by a Client of its own, and n waiters of Client c:
// the first queued, the others following it in that order.
func trainOf(t *testing.T, ctx context.Context, n int, window, max time.Duration) (c *Client, name string, holder *Lock, locks []*Lock, gots []chan error) {
	t.Helper()
	_, rdb, name, holder := heldLock(t)
	c, _ = lockTestClient(t)
	setTrains(c, window, max)
	for i := 0; i < n; i++ {
		l := c.NewLock(name, nil)
		redistest.UnlockAtEnd(t, l)
		locks = append(locks, l)
		gots = append(gots, lockAsync(ctx, l))
		if i == 0 {
			queuedEntries(t, ctx, rdb, name, 1)
			waitParked(t, c, name, 1)
		} else {
			waitFollowing(t, c, name, i)
		}
	}
	return c, name, holder, locks, gots
}

// Waiters of a Client that arrive within the window of its queued waiter
// write no queue entry: they follow it, and each holder passes the lock to
// the next of them in process, in arrival order.
func TestLockFollowersPassedInArrivalOrder(t *testing.T) {
	ctx := redistest.Context(t, 30*time.Second)
	c, name, holder, locks, gots := trainOf(t, ctx, 4, time.Minute, time.Minute)
	rdb := redistest.Client(t)
	if n := rdb.ZCard(ctx, wire.LockQueueKey(name)).Val(); n != 1 {
		t.Fatalf("%d queue entries with one waiter queued and three following it, want 1", n)
	}
	releaseTo(t, ctx, holder, gots[0])
	for i := 1; i < len(locks); i++ {
		for j := i + 1; j < len(locks); j++ {
			select {
			case err := <-gots[j]:
				t.Fatalf("follower %d returned (%v) before follower %d", j, err, i)
			default:
			}
		}
		releaseTo(t, ctx, locks[i-1], gots[i])
	}
	if err := locks[len(locks)-1].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if n := passes(c); n != 3 {
		t.Errorf("local passes = %d, want 3 (one to each follower)", n)
	}
	if n := rdb.Exists(ctx, name, wire.LockQueueKey(name), wire.LockEntriesKey(name)).Val(); n != 0 {
		t.Errorf("%d of the lock, its queue and its entries left after the last release", n)
	}
}

// When the waiter a train follows gives up, its followers queue
// themselves and still get the lock.
func TestLockFollowersQueueWhenTheirLeaderGivesUp(t *testing.T) {
	ctx := redistest.Context(t, 30*time.Second)
	_, rdb, name, holder := heldLock(t)
	c, _ := lockTestClient(t)
	setTrains(c, time.Minute, time.Minute)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	leader := c.NewLock(name, nil)
	gaveUp := lockAsync(lctx, leader)
	queuedEntries(t, ctx, rdb, name, 1)
	waitParked(t, c, name, 1)
	f1, f2 := c.NewLock(name, nil), c.NewLock(name, nil)
	redistest.UnlockAtEnd(t, f1)
	redistest.UnlockAtEnd(t, f2)
	got1 := lockAsync(ctx, f1)
	waitFollowing(t, c, name, 1)
	got2 := lockAsync(ctx, f2)
	waitFollowing(t, c, name, 2)
	cancel()
	if err := <-gaveUp; !errors.Is(err, ErrNotObtained) {
		t.Fatalf("the leader that gave up: %v, want ErrNotObtained", err)
	}
	queuedEntries(t, ctx, rdb, name, 2)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var l *Lock
		select {
		case err := <-got1:
			l = f1
			if err != nil {
				t.Fatal(err)
			}
		case err := <-got2:
			l = f2
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("a follower whose leader gave up never got the lock")
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A follower that has waited followMax queues itself, so that the console
// and deadlock detection see it, behind the waiter it followed.
func TestLockFollowerQueuesItselfAfterFollowMax(t *testing.T) {
	ctx := redistest.Context(t, 30*time.Second)
	c, name, holder, locks, gots := trainOf(t, ctx, 2, time.Minute, 50*time.Millisecond)
	rdb := redistest.Client(t)
	queuedEntries(t, ctx, rdb, name, 2)
	waitParked(t, c, name, 2)
	if n := following(c, name); n != 0 {
		t.Fatalf("%d waiters still follow after followMax", n)
	}
	releaseTo(t, ctx, holder, gots[0])
	releaseTo(t, ctx, locks[0], gots[1])
	if err := locks[1].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A pass to a follower touches no queue entry: inside the scripts it costs
// HGET, TIME, DEL of the lock, the ZRANGE naming the next waiter, the
// lock's HSET (holder, hold record and mark) and PEXPIRE, two PUBLISH, and
// the grant's HMGET and HSET: 10, and 3 more on a stats bucket's first
// grant (HINCRBY, PEXPIRE, HLEN). The follower sent nothing before it, and
// sends nothing after. With the hold record in a key of its own it cost
// 12 (that key's HSET and PEXPIRE).
func TestLockFollowerPassCommands(t *testing.T) {
	ctx := redistest.Context(t, 30*time.Second)
	rdb := redistest.NewClient(t, redistest.StartT(t))
	name := "cost"
	holder := New(rdb, &Options{NoRegistry: true}).NewLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	c := New(rdb, &Options{NoRegistry: true})
	setTrains(c, time.Minute, time.Minute)
	leader, follower := c.NewLock(name, nil), c.NewLock(name, nil)
	got1 := lockAsync(ctx, leader)
	queuedEntries(t, ctx, rdb, name, 1)
	waitParked(t, c, name, 1)
	got2 := lockAsync(ctx, follower)
	waitFollowing(t, c, name, 1)
	releaseTo(t, ctx, holder, got1)
	before := redistest.CommandCalls(t, rdb)
	releaseTo(t, ctx, leader, got2)
	calls := diffCalls(before, redistest.CommandCalls(t, rdb))
	var inside int64
	for cmd, n := range calls {
		if !notInScripts[cmd] {
			inside += n
		}
	}
	limit := int64(10)
	if calls["hlen"] > 0 {
		limit += 3
	}
	t.Logf("a pass to a follower: %d commands inside the scripts: %v", inside, calls)
	if inside > limit || calls["evalsha"] != 1 || calls["zrem"]+calls["hdel"]+calls["zadd"] != 0 {
		t.Errorf("a pass to a follower ran %d commands inside the scripts (want at most %d, no queue entry touched) and %d EVALSHA (want 1): %v",
			inside, limit, calls["evalsha"], calls)
	}
	if err := follower.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Many waiters of two Clients, most of them following: never two holders.
// Waiters are seen following (a sampler reads the trains while the Clients
// contend), so the run did test trains.
func TestLockFollowersMutualExclusion(t *testing.T) {
	var mu sync.Mutex
	var clients []*Client
	var name string
	stop, sampled := make(chan struct{}), make(chan int)
	go func() {
		most := 0
		for {
			select {
			case <-stop:
				sampled <- most
				return
			case <-time.After(time.Millisecond):
			}
			mu.Lock()
			for _, c := range clients {
				most = max(most, following(c, name))
			}
			mu.Unlock()
		}
	}()
	got := contendOnTwoClients(t, func(c *Client, lock string) {
		setTrains(c, 20*time.Millisecond, 200*time.Millisecond)
		mu.Lock()
		clients, name = append(clients, c), lock
		mu.Unlock()
	})
	close(stop)
	most := <-sampled
	t.Logf("%d of %d acquisitions were local passes; up to %d waiters of one Client followed at once",
		passes(got[0])+passes(got[1]), 2*6*40, most)
	if most == 0 {
		t.Fatal("no waiter was ever seen following a train: the run tested no train")
	}
}

// A follower that queues itself while the waiter it followed is still
// queued stands right behind that waiter, ahead of another Client's waiter
// that came after it: it keeps the place it had in process.
func TestLockFollowerQueuesBehindItsLeader(t *testing.T) {
	ctx := redistest.Context(t, 30*time.Second)
	// The follower waits in process until the other Client's waiter is
	// queued, however long that takes, then gives up following as at
	// followMax (nudgeFollowers), not on a timer a loaded machine could
	// beat.
	c, name, holder, locks, gots := trainOf(t, ctx, 2, time.Minute, time.Hour)
	rdb := redistest.Client(t)
	other, gotOther := waiting(t, ctx, name, nil)
	queuedEntries(t, ctx, rdb, name, 2)
	if n := following(c, name); n != 1 {
		t.Fatalf("%d waiters following with followMax an hour, want 1", n)
	}
	nudgeFollowers(c, name)
	queuedEntries(t, ctx, rdb, name, 3)
	order := rdb.ZRange(ctx, wire.LockQueueKey(name), 0, -1).Val()
	want := []string{tokenOf(t, ctx, rdb, name, locks[0]), tokenOf(t, ctx, rdb, name, locks[1]), tokenOf(t, ctx, rdb, name, other)}
	if len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("queue %v, want leader, follower, other Client's waiter: %v", order, want)
	}
	releaseTo(t, ctx, holder, gots[0])
	releaseTo(t, ctx, locks[0], gots[1])
	releaseTo(t, ctx, locks[1], gotOther)
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A handle that holds the lock and takes it again while a waiter of its
// Client is queued re-enters at once: it never follows, which would have it
// wait behind a waiter that waits for its own hold.
func TestLockReentryNeverFollows(t *testing.T) {
	ctx := redistest.Context(t, 30*time.Second)
	c, rdb := lockTestClient(t)
	setTrains(c, time.Minute, time.Minute)
	name := redistest.Prefix(t) + "lock"
	holder, waiter := c.NewLock(name, nil), c.NewLock(name, nil)
	redistest.UnlockAtEnd(t, holder)
	redistest.UnlockAtEnd(t, waiter)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	got := lockAsync(ctx, waiter)
	queuedEntries(t, ctx, rdb, name, 1)
	waitParked(t, c, name, 1)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := holder.Lock(rctx); err != nil {
		t.Fatalf("re-entry with a waiter of the same Client queued: %v", err)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	releaseTo(t, ctx, holder, got)
}
