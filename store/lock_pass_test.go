package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// A local pass (lock_pass.go): the release hands the lock to the next
// waiter of its own Client in process, in the same round trip as the
// script that records it in Redis, and only to the waiter the queue names.

// releaseTo releases from's hold and waits for the waiting Lock call got
// to be granted.
func releaseTo(t *testing.T, ctx context.Context, from *Lock, got chan error) {
	t.Helper()
	if err := from.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the next waiter: %v", err)
	}
}

// lockAsync runs l.Lock(ctx) and reports its result.
func lockAsync(ctx context.Context, l *Lock) chan error {
	got := make(chan error, 1)
	go func() { got <- l.Lock(ctx) }()
	return got
}

func passes(c *Client) int64 { return c.WaitStats().Passes }

// waitParked waits until n of c's waiters on name are parked in Lock (their
// queueing attempt answered), so a release can pass to them: Redis shows an
// entry a moment before its waiter has read the reply.
func waitParked(t *testing.T, c *Client, name string, n int) {
	t.Helper()
	h := &sharedFor(c).hub
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.mu.Lock()
		parked := 0
		if cw := h.channels[wire.UnlockChannel(name)]; cw != nil {
			for w := range cw.members {
				if w.parked {
					parked++
				}
			}
		}
		h.mu.Unlock()
		if parked == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters parked on %s, want %d", parked, name, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// queuedTwo is a lock held by a Client of its own (holder), and first and
// second, both of Client c, queued and parked behind it in that order.
type queuedTwo struct {
	ctx           context.Context
	rdb           *redis.Client
	c             *Client
	name          string
	holder        *Lock
	first, second *Lock
	got1, got2    chan error
}

func queueTwo(t *testing.T, opts *LockOptions) queuedTwo {
	t.Helper()
	return queueTwoWith(t, opts, opts)
}

// queueTwoWith is queueTwo with first and second made with options of
// their own.
func queueTwoWith(t *testing.T, firstOpts, secondOpts *LockOptions) queuedTwo {
	t.Helper()
	q := queuedTwo{}
	q.ctx, q.rdb, q.name, q.holder = heldLock(t)
	q.c, _ = lockTestClient(t)
	setTrains(q.c, 0, 0) // both queued, as the tests below need
	q.first, q.second = q.c.NewLock(q.name, firstOpts), q.c.NewLock(q.name, secondOpts)
	redistest.UnlockAtEnd(t, q.first)
	redistest.UnlockAtEnd(t, q.second)
	q.got1 = lockAsync(q.ctx, q.first)
	queuedEntries(t, q.ctx, q.rdb, q.name, 1)
	q.got2 = lockAsync(q.ctx, q.second)
	queuedEntries(t, q.ctx, q.rdb, q.name, 2)
	waitParked(t, q.c, q.name, 2)
	return q
}

// twoQueued is queueTwo with first granted by the holder's release, so
// that first knows second is next in the queue, and second parked again
// after that release woke it.
func twoQueued(t *testing.T, opts *LockOptions) (ctx context.Context, c *Client, name string, first, second *Lock, got2 chan error) {
	t.Helper()
	q := queueTwo(t, opts)
	grantFirst(t, q)
	return q.ctx, q.c, q.name, q.first, q.second, q.got2
}

// grantFirst has the holder's release grant first, and waits until second
// is parked again. The hand-off message wakes every waiter on the lock,
// and second sends its entry again before it parks: a release right after
// the grant could find that attempt on the wire, and the waiter no longer
// one a pass may go to (TestLockPassInProcess failed so about once in 20
// runs on a Cluster).
func grantFirst(t *testing.T, q queuedTwo) {
	t.Helper()
	since := time.Now()
	releaseTo(t, q.ctx, q.holder, q.got1)
	waitRequeued(t, q.c, q.name, since)
}

// waitRequeued waits until c's one waiter on name is parked with an entry
// sent after since.
func waitRequeued(t *testing.T, c *Client, name string, since time.Time) {
	t.Helper()
	h := &sharedFor(c).hub
	deadline := time.Now().Add(5 * time.Second)
	for {
		h.mu.Lock()
		var parked, fresh int
		if cw := h.channels[wire.UnlockChannel(name)]; cw != nil {
			for w := range cw.members {
				if w.parked {
					parked++
					if w.queuedAt.After(since) {
						fresh++
					}
				}
			}
		}
		h.mu.Unlock()
		if parked == 1 && fresh == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters parked on %s, %d of them queued again since the grant; want 1 and 1", parked, name, fresh)
		}
		time.Sleep(time.Millisecond)
	}
}

// The next waiter belongs to the releasing Client: it is passed the lock in
// process. Its Client hears no message at all here, so only the pass can
// have woken it within the test's time.
func TestLockPassInProcess(t *testing.T) {
	ctx, c, name, first, second, got2 := twoQueued(t, nil)
	rdb := redistest.Client(t)
	deafen(second)
	releaseTo(t, ctx, first, got2)
	if n := passes(c); n != 1 {
		t.Fatalf("local passes = %d, want 1", n)
	}
	// Its next call waits for the pass's reply, then finds it recorded.
	if err := second.Refresh(ctx); err != nil {
		t.Fatalf("Refresh after the pass: %v", err)
	}
	heldBySole(t, rdb, name, second.HolderID())
	if n := rdb.ZCard(ctx, wire.LockQueueKey(name)).Val(); n != 0 {
		t.Errorf("queue after the pass holds %d tokens, want 0", n)
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after the pass: %v", err)
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Error("lock still exists after its only level was released")
	}
}

// The queue stays the one order: when a waiter of another Client is first,
// the release hands the lock to it through Redis, and the releasing
// Client's own waiter behind it waits its turn.
func TestLockPassKeepsQueueOrder(t *testing.T) {
	ctx, rdb, name, holder := heldLock(t)
	c, _ := lockTestClient(t)
	setTrains(c, 0, 0) // third queued behind other, not following first
	first, third := c.NewLock(name, nil), c.NewLock(name, nil)
	redistest.UnlockAtEnd(t, first)
	redistest.UnlockAtEnd(t, third)
	got1 := lockAsync(ctx, first)
	queuedEntries(t, ctx, rdb, name, 1)
	other, got2 := waiting(t, ctx, name, nil)
	queuedEntries(t, ctx, rdb, name, 2)
	got3 := lockAsync(ctx, third)
	queuedEntries(t, ctx, rdb, name, 3)

	releaseTo(t, ctx, holder, got1)
	releaseTo(t, ctx, first, got2)
	select {
	case err := <-got3:
		t.Fatalf("the releasing Client's own waiter, queued last, returned first (%v)", err)
	default:
	}
	if n := passes(c); n != 0 {
		t.Fatalf("local passes = %d, want 0: the next waiter was another Client's", n)
	}
	releaseTo(t, ctx, other, got3)
	if err := third.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A pass relies on the releaser's hold. When that hold is gone (here the key
// was deleted, as a force-unlock or a lost Redis does), the release changes
// nothing, the releaser hears ErrNotHeld, the waiter it let go on learns its
// hold was never made, and its queue entry is withdrawn so no later release
// hands the lock to a waiter that stopped waiting.
func TestLockPassFromBrokenHold(t *testing.T) {
	ctx, c, name, first, second, got2 := twoQueued(t, nil)
	rdb := redistest.Client(t)
	if err := rdb.Del(ctx, name).Err(); err != nil {
		t.Fatal(err)
	}
	if err := first.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Unlock of a deleted hold = %v, want ErrNotHeld", err)
	}
	if n := passes(c); n != 1 {
		t.Fatalf("local passes = %d, want 1 (the waiter was parked)", n)
	}
	if err := <-got2; err == nil {
		if err := second.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
			t.Fatalf("Unlock after a pass that was not made = %v, want ErrNotHeld", err)
		}
	} else if !errors.Is(err, ErrNotObtained) {
		t.Fatalf("Lock of the waiter passed a broken hold = %v, want nil or ErrNotObtained", err)
	}
	if n := rdb.ZCard(ctx, wire.LockQueueKey(name)).Val(); n != 0 {
		t.Errorf("queue still holds %d tokens after the failed pass", n)
	}
	if n := rdb.Exists(ctx, name).Val(); n != 0 {
		t.Errorf("lock exists after a pass that was not made: %v", rdb.HGetAll(ctx, name).Val())
	}
	// The waiter's handle starts afresh.
	if err := second.TryLock(ctx); err != nil {
		t.Fatalf("TryLock after the failed pass: %v", err)
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A handle whose holder field another handle may share (an explicit Owner)
// never passes: a concurrent re-entry through the other handle could add a
// level the pass does not see.
func TestLockPassNeedsItsOwnHolderField(t *testing.T) {
	// Not twoQueued: second shares first's holder field, so once first
	// holds, second's next attempt is a re-entry of that hold, not a wait.
	q := queueTwo(t, &LockOptions{Owner: "shared-owner"})
	releaseTo(t, q.ctx, q.holder, q.got1)
	releaseTo(t, q.ctx, q.first, q.got2)
	if n := passes(q.c); n != 0 {
		t.Fatalf("local passes = %d, want 0 for an explicit owner", n)
	}
	if err := q.second.Unlock(q.ctx); err != nil {
		t.Fatal(err)
	}
}

// Under contention from two Clients, with passes and hand-offs mixed, no two
// holders overlap: an unguarded read-yield-write counter loses no update.
func TestLockPassMutualExclusion(t *testing.T) {
	clients := contendOnTwoClients(t, nil)
	if n := passes(clients[0]) + passes(clients[1]); n == 0 {
		t.Fatal("no local pass in the run: the test did not exercise one")
	} else {
		t.Logf("%d of %d acquisitions were local passes", n, 2*6*40)
	}
}

// contendOnTwoClients has 6 handles on each of two Clients (set up by
// setup, when not nil) take one lock 40 times each, and fails the test on
// any overlap.
func contendOnTwoClients(t *testing.T, setup func(c *Client, name string)) []*Client {
	t.Helper()
	const perClient, iterations = 6, 40
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 60*time.Second)
	var clients []*Client
	var locks []*Lock
	for range 2 {
		c, _ := lockTestClient(t)
		if setup != nil {
			setup(c, name)
		}
		clients = append(clients, c)
		for range perClient {
			l := c.NewLock(name, nil)
			redistest.UnlockAtEnd(t, l)
			locks = append(locks, l)
		}
	}
	holds, overlaps := contend(t, ctx, locks, iterations)
	if want := int64(2 * perClient * iterations); holds != want || overlaps != 0 {
		t.Fatalf("%d holds, %d of them overlapping another; want %d and none", holds, overlaps, want)
	}
	return clients
}

// A pass that gets no answer at all (a proxy keeps every send of it from
// Redis, so each one times out, until the releaser's lease bound has
// passed) ends as an Unlock whose outcome is unknown: the releaser reports
// ErrUncertain and keeps its level, as after any release whose reply was
// lost (its next Unlock settles it), and the waiter that went on hears that
// its hold was not confirmed. No holder field counts more than one level.
//
// Only the pass is held back: the waiter's entry refreshes still reach
// Redis, so the waiter stays one a pass may go to however long the
// machine stalls this goroutine (pausing Redis's writes instead held
// those refreshes too, and a stall of a second left the waiter out).
func TestLockPassOutcomeUnknown(t *testing.T) {
	t.Parallel() // a private server, and 10 s of sends held
	srv := redistest.StartT(t)
	rdb := redistest.NewClient(t, srv)
	ctx := redistest.Context(t, 30*time.Second)
	name := redistest.Prefix(t) + "lock"
	holder := New(redistest.NewClient(t, srv), nil).NewLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	p := startProxyTo(t, srv.Addr)
	c := New(proxiedClient(t, p), nil)
	setTrains(c, 0, 0) // second queued, as the pass below needs
	// A 10 s lease: the pass is only made while half of it is left, so
	// this goroutine may stall for four seconds between the grant and
	// Unlock (the grant's lease is dated from the waiter's last entry
	// refresh, up to a second before it). The pass is sent twice, each
	// send waiting out go-redis's read timeout (5 s by default).
	opts := &LockOptions{Lease: 10 * time.Second, NoWatchdog: true}
	first, second := c.NewLock(name, opts), c.NewLock(name, opts)
	got1 := lockAsync(ctx, first)
	queuedEntries(t, ctx, rdb, name, 1)
	got2 := lockAsync(ctx, second)
	queuedEntries(t, ctx, rdb, name, 2)
	waitParked(t, c, name, 2)
	since := time.Now()
	releaseTo(t, ctx, holder, got1)
	waitRequeued(t, c, name, since)
	p.holdRequests(releasePass)
	if err := first.Unlock(ctx); !errors.Is(err, ErrUncertain) {
		t.Fatalf("Unlock whose pass got no answer = %v, want ErrUncertain", err)
	}
	if p.held.Load() == 0 {
		t.Fatal("no pass was sent")
	}
	if n := first.levels.Load(); n != 1 {
		t.Fatalf("releaser's levels after an unanswered pass = %d, want 1 (kept, as after a lost release reply)", n)
	}
	if passes(c) != 1 {
		t.Fatalf("local passes = %d, want 1", passes(c))
	}
	if err := <-got2; err != nil {
		t.Fatalf("the waiter the pass woke: %v", err)
	}
	if err := second.Unlock(ctx); err == nil || errors.Is(err, ErrUncertain) && !strings.Contains(err.Error(), "not confirmed") {
		t.Fatalf("Unlock of a hold whose pass was not confirmed = %v, want the pass's error", err)
	}
	for field, n := range rdb.HGetAll(ctx, name).Val() {
		if wire.IsHolderField(field) && n != "1" {
			t.Errorf("holder %s counts %s levels after the unanswered pass", field, n)
		}
	}
}

// The release script's pass, sent twice (a re-send after a lost reply),
// hands the lock over once: the second answer is "already made", with the
// same next waiter, and the grant is counted once.
func TestLockPassScriptAppliesOnce(t *testing.T) {
	q := queueTwo(t, nil)
	ctx, rdb, name, holder, first, second, got1, got2 := q.ctx, q.rdb, q.name, q.holder, q.first, q.second, q.got1, q.got2
	// The pass by hand, from the holder to first, as store sends it.
	argv := holder.releaseArgs(releasePass, tokenOf(t, ctx, rdb, name, first), first.holder, first.lease.Milliseconds(), "5")
	before := redistest.StatsTotal(t, rdb, wire.StatsKey(name)).Acquired
	var nexts []string
	for want := range []int64{5, 6} {
		code, next, err := passReply(lockReleaseScript.Run(ctx, rdb, holder.keys, argv...))
		if err != nil || code != int64(5+want) {
			t.Fatalf("pass #%d = %d, %v; want %d", want+1, code, err, 5+want)
		}
		nexts = append(nexts, next)
	}
	if nexts[0] == "" || nexts[0] != nexts[1] {
		t.Fatalf("next waiter named by the two answers = %q, want second's token both times", nexts)
	}
	heldBySole(t, rdb, name, first.HolderID())
	if n := redistest.StatsTotal(t, rdb, wire.StatsKey(name)).Acquired - before; n != 1 {
		t.Fatalf("grants counted for the pass sent twice = %d, want 1", n)
	}
	holder.levels.Store(0) // its level went with the pass
	// first learns of its hold from the pass's message; the queue goes on.
	if err := <-got1; err != nil {
		t.Fatal(err)
	}
	releaseTo(t, ctx, first, got2)
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// tokenOf is the queue token of l's waiting Lock call.
func tokenOf(t *testing.T, ctx context.Context, rdb *redis.Client, name string, l *Lock) string {
	t.Helper()
	for token, entry := range rdb.HGetAll(ctx, wire.LockEntriesKey(name)).Val() {
		if token != "=" && strings.HasSuffix(entry, " "+l.holder) {
			return token
		}
	}
	t.Fatalf("no queue entry of %s", l.holder)
	return ""
}

// A pass records the waiter's wait as its own Client measured it, not
// from its queue score: a waiter placed behind its Client's is scored up
// to lock_acquire.lua's follow window before it arrived. Here the score
// says a minute.
func TestLockPassRecordsTheWaitersOwnWait(t *testing.T) {
	ctx, c, name, first, second, got2 := twoQueued(t, nil)
	rdb := redistest.Client(t)
	queue := wire.LockQueueKey(name)
	tokens := rdb.ZRange(ctx, queue, 0, -1).Val()
	if len(tokens) != 1 {
		t.Fatalf("queue %v, want the second waiter alone", tokens)
	}
	early := float64(rdb.Time(ctx).Val().Add(-time.Minute).UnixMicro())
	if err := rdb.ZAddXX(ctx, queue, redis.Z{Score: early, Member: tokens[0]}).Err(); err != nil {
		t.Fatal(err)
	}
	const atLeast = 50 // ms the second waiter surely waits
	time.Sleep(atLeast * time.Millisecond)
	releaseTo(t, ctx, first, got2)
	if n := passes(c); n != 1 {
		t.Fatalf("local passes = %d, want 1", n)
	}
	if err := second.Refresh(ctx); err != nil { // waits for the pass's reply
		t.Fatal(err)
	}
	got := readWaitFields(t, rdb, name)
	if got.count() != 2 || got.max >= 10_000 {
		t.Errorf("recorded %+v: want the two grants' waits, each under 10 s (the test's own waits)", got)
	}
	if got.max < atLeast {
		t.Errorf("recorded %+v: want the passed waiter's wait, at least %d ms", got, atLeast)
	}
}

// A re-entry whose reply was lost and which Redis ran twice leaves the
// holder field a level its handle does not count. A pass from that handle,
// which holds one level as far as it knows, takes those levels with it: a
// refusal would leave them to the handle's next Lock (a re-entry of the
// stale field) while the waiter it let go on runs on the same lock.
func TestLockPassTakesLevelsTheHandleDoesNotCount(t *testing.T) {
	ctx, c, name, first, second, got2 := twoQueued(t, nil)
	rdb := redistest.Client(t)
	if err := rdb.HIncrBy(ctx, name, first.HolderID(), 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatalf("Unlock by a pass, with a level the handle does not count: %v", err)
	}
	if err := <-got2; err != nil {
		t.Fatal(err)
	}
	if n := passes(c); n != 1 {
		t.Fatalf("local passes = %d, want 1", n)
	}
	heldBySole(t, rdb, name, second.HolderID())
	if err := second.Unlock(ctx); err != nil {
		t.Fatalf("the waiter's Unlock: %v", err)
	}
}

// A waiter whose hand-off message never came takes its hold by its next
// attempt (the mark). That attempt's reply names the queue's head, as the
// message would have, so the new holder still passes to its own next
// waiter in process. On a Cluster the sharded copy of the hand-off's "0"
// can wake the waiter before the message arrives, which took this path.
//
// Only first retries quickly. A pass goes only to a parked waiter, one
// whose attempt is not on the wire, so second, which hears nothing either,
// is parked before the release and retries at its default pace: with
// first's 50 ms, a release met second's attempt in flight in about one
// run of 30.
func TestLockPassAfterALostHandOffMessage(t *testing.T) {
	q := queueTwoWith(t, &LockOptions{RetryInterval: 50 * time.Millisecond}, nil)
	deafen(q.first) // the Client's waiters hear nothing on the lock
	releaseTo(t, q.ctx, q.holder, q.got1)
	waitParked(t, q.c, q.name, 1)
	releaseTo(t, q.ctx, q.first, q.got2)
	if n := passes(q.c); n != 1 {
		t.Fatalf("local passes = %d, want 1: the holder whose message was lost did not know its next waiter", n)
	}
	if err := q.second.Unlock(q.ctx); err != nil {
		t.Fatal(err)
	}
}

// A pass re-sent after a lost reply, once the waiter it made the holder has
// taken that hold by its own attempt (its message lost, or on a Cluster
// the sharded "0" waking it first), still answers "already made": the
// hand-off mark lives as long as the hold it marks. Answered "refused"
// instead, the releaser and the waiter were both told the hold was not
// theirs, and the waiter left the lock held until its lease ran out.
func TestLockPassResentAfterTheWaiterTookItsHold(t *testing.T) {
	q := queueTwo(t, &LockOptions{RetryInterval: 50 * time.Millisecond})
	deafen(q.first)
	argv := q.holder.releaseArgs(releasePass, tokenOf(t, q.ctx, q.rdb, q.name, q.first),
		q.first.holder, q.first.lease.Milliseconds(), "5")
	if code, _, err := passReply(lockReleaseScript.Run(q.ctx, q.rdb, q.holder.keys, argv...)); err != nil || code != 5 {
		t.Fatalf("pass = %d, %v; want 5", code, err)
	}
	if err := <-q.got1; err != nil { // by its own attempt: it heard nothing
		t.Fatal(err)
	}
	if code, _, err := passReply(lockReleaseScript.Run(q.ctx, q.rdb, q.holder.keys, argv...)); err != nil || code != 6 {
		t.Fatalf("pass re-sent after the waiter took its hold = %d, %v; want 6 (already made)", code, err)
	}
	releaseTo(t, q.ctx, q.first, q.got2)
	if err := q.second.Unlock(q.ctx); err != nil {
		t.Fatal(err)
	}
}
