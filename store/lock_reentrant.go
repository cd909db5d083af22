package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The reentrant lock speaks Redisson's RLock wire format, so Go
// applications, Java applications using Redisson and the console all see and
// respect the same locks: hash <name>, one field "<client-id>:<owner>" with
// the reentry count, PEXPIRE lease, "0" published on wire.UnlockChannel(name)
// when the last level is released.

var (
	lockAcquireScript = newScript("lock_acquire")
	lockReleaseScript = newScript("lock_release")
	lockRenewScript   = newScript("lock_renew")
)

// unlockMessage is what Redisson's LockPubSub reads as "unlocked".
const unlockMessage = wire.UnlockMessage

// Lock is a handle on one reentrant lock for one owner. A handle may be used
// from several goroutines, but they then act as one holder.
type Lock struct {
	c        *Client
	shared   *lockShared
	name     string
	holder   string
	lease    time.Duration
	retryCap time.Duration
	watchdog bool
	err      error // invalid input; every method returns it before any I/O

	// Derived once: every acquire and release names them.
	keys     []string // lock, stats, waiter queue, waiter entries
	unlockCh string
	wakeCh   string
	// argv is lock_acquire's ARGV[1..3] (lease, holder, sharded); the
	// calls that need no more (an attempt that does not queue, a release, a
	// renewal) are prepared once.
	argv                []any
	tryCall, unlockCall preparedCall
	// lastCall releases the last level of a handle that is the only one
	// on its holder field (unique) without reading the count first
	// (lock_release's "last").
	lastCall  preparedCall
	renewCall preparedCall
	// confirmCall is the renewal that confirms a hand-off's short claim
	// (replica acknowledgement required): no record of it, as the
	// hand-off has just recorded the hold.
	confirmCall preparedCall
	// owners are the handles of the owners calls name in ctx (owner.go);
	// nil for a handle with an explicit Owner.
	owners *byOwner[*Lock]
	// levels is how many levels this handle's calls took and did not give
	// back. An acquire whose outcome is unknown is withdrawn only when it is
	// 0: then any level of this holder that the call may have added is one
	// nobody else of the handle believes it holds.
	levels atomic.Int64
	// unique says no other handle holds under this holder field (its
	// owner is random), which a local pass needs (lock_pass.go); passMu
	// keeps this handle's acquire attempts out of a pass in flight, and
	// hold is what a pass needs to know of the current hold.
	unique bool
	passMu sync.RWMutex
	hold   holdState
	// watch tells the caller when a hold ends without its release (lost.go).
	watch leaseWatch
	// spare is a renewal record of this handle's that the watchdog no
	// longer uses (watchdog.go); lockShared.mu guards it.
	spare *renewal
}

// NewLock returns a handle on the lock stored at name. Invalid input is
// reported by the handle's first call, with nothing sent to Redis.
func (c *Client) NewLock(name string, opts *LockOptions) *Lock {
	c.reg.announce(name)
	l := &Lock{c: c, name: name, lease: opts.getLease(), retryCap: opts.getRetryInterval(), watchdog: opts.watchdog(),
		unique: opts == nil || opts.Owner == ""}
	if l.err = validateName(name); l.err == nil {
		l.err = opts.validate(MaxOwnerLen)
	}
	l.holder = c.ID() + ":" + opts.getOwner()
	l.shared = sharedFor(c)
	l.keys = []string{name, wire.StatsKey(name), wire.LockQueueKey(name), wire.LockEntriesKey(name)}
	l.unlockCh, l.wakeCh = wire.UnlockChannel(name), wire.LockWakeChannel(name)
	l.argv = []any{strconv.FormatInt(l.lease.Milliseconds(), 10), l.holder, c.pubsub}
	l.tryCall = lockAcquireScript.prepare(l.keys, l.argv...)
	l.unlockCall = lockReleaseScript.prepare(l.keys, l.releaseArgs(releaseOne)...)
	l.lastCall = lockReleaseScript.prepare(l.keys, l.holder, releaseLast, c.pubsub)
	// A renewal the script refuses is recorded as late (stats, KEYS[2]).
	l.renewCall = lockRenewScript.prepare(l.keys[:2], l.argv[0], l.holder, "1")
	l.confirmCall = lockRenewScript.prepare(l.keys[:1], l.argv[0], l.holder)
	if opts == nil || opts.Owner == "" {
		l.owners = &byOwner[*Lock]{idle: func(h *Lock) bool { return h.levels.Load() == 0 },
			make: func(owner string) *Lock { return c.NewLock(name, withOwner(opts, owner)) }}
	}
	return l
}

// Name is the key of the lock.
func (l *Lock) Name() string { return l.name }

// HolderID is the hash field this handle holds the lock under,
// "<client-id>:<owner>", as the console shows it.
func (l *Lock) HolderID() string { return l.holder }

// TryLock takes the lock, or re-enters it, without waiting. When another
// holder has it the error is a *LockedError (errors.Is ErrNotObtained).
func (l *Lock) TryLock(ctx context.Context) error {
	if a := actor(ctx, l.owners); a != nil {
		return a.TryLock(ctx)
	}
	if l.err != nil {
		return l.err
	}
	if err := l.c.decidePubsub(ctx); err != nil {
		return notObtained(err)
	}
	ttl, ok, err := l.tryAcquire(ctx, nil)
	if err != nil || ok {
		return err
	}
	return &LockedError{Name: l.name, TTL: ttl}
}

// Lock takes the lock, waiting while another holder has it. Waiters are
// served in arrival order, except that a waiter may be passed by another
// Client's waiter that came less than 3 ms after it (a Client's waiters
// stand together): a release hands the lock straight to the first live
// waiter (see lock_wait.go). When ctx ends first the error matches both
// ErrNotObtained and ctx.Err() with errors.Is.
//
// The first attempt goes out before subscribing, so an uncontended lock
// costs one round trip; a waiter is queued only once Redis confirmed its
// Client's subscription, so no hand-off or unlock can slip past it. While
// queued it sleeps until it is handed the lock, an unlock message from a
// client that does not hand off, the holder's lease would run out, or its
// queue entry needs refreshing (capped by RetryInterval).
func (l *Lock) Lock(ctx context.Context) error {
	if a := actor(ctx, l.owners); a != nil {
		return a.Lock(ctx)
	}
	if l.err != nil {
		return l.err
	}
	if err := l.c.decidePubsub(ctx); err != nil {
		return notObtained(err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	start := time.Now()
	// When this Client already listens on the lock, others of its waiters
	// are queued: go straight to the queue rather than spend an attempt.
	failed := false
	if !l.shared.hub.hot(l.unlockCh) {
		if _, ok, err := l.tryAcquireAt(ctx, nil, start); err != nil || ok {
			return err
		}
		failed = true
	}
	// Made only for a wait: a first attempt that takes the lock, the
	// common case, allocates nothing and reads the clock once.
	clock := &waitClock{start: start, failed: failed}
	turn := &waitTurn{token: l.shared.group + "." + randomHex(), clock: clock}
	w, err := l.shared.hub.join(ctx, turn.token, l.unlockCh, l.wakeCh)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
		}
		// Nothing is held or queued: a plain "not obtained", with the cause.
		return fmt.Errorf("%w: %q: subscribe to unlock channel: %w", ErrNotObtained, l.name, err)
	}
	defer w.leave(ctx)

	if l.mayFollow(ctx) && l.shared.hub.board(w, l, clock, time.Now()) {
		done, behind, err := l.follow(ctx, w, clock)
		if done {
			return err
		}
		turn.behind = behind
	}

	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		sent := time.Now()
		ttl, ok, err := l.tryAcquire(ctx, turn)
		if err != nil {
			// The entry, if any, expires on its own; a hand-off to it in the
			// meantime would be released by its lease.
			l.withdraw(ctx, turn)
			l.shared.hub.disband(w.train)
			return err
		}
		if ok {
			l.handOver(w)
			return nil
		}
		if !turn.queued && l.mayFollow(ctx) {
			l.shared.hub.lead(w, sent)
		}
		turn.queued, turn.queuedAt = true, sent
		clock.failed = true
		wait := min(l.retryCap, waitEntryTTL/3)
		if ttl >= 0 && ttl < wait {
			wait = ttl
		}
		timer.Reset(max(wait, time.Millisecond))
		// Parked, a holder of this Client may pass the lock in process
		// (lock_pass.go); whatever wakes the waiter, such a pass is taken.
		w.park(l, turn.queuedAt, clock)
		why := wokeHandedOff
		select {
		case <-w.H:
		default:
			select {
			case <-w.H:
			case <-w.C:
				why = wokeMessage
			case <-timer.C:
				why = wokeTimer
			case <-ctx.Done():
				why = wokeDone
			}
		}
		pass, next := w.unpark()
		if pass != nil {
			l.handOver(w)
			return l.takePass(ctx, pass)
		}
		switch why {
		case wokeHandedOff:
			if ok, err := l.handedOff(ctx, turn, next); ok || err != nil {
				if ok {
					l.handOver(w)
				} else {
					l.shared.hub.disband(w.train)
				}
				return err
			}
			timer.Stop() // no stale tick after Stop since Go 1.23
		case wokeMessage:
			if !timer.Stop() {
				<-timer.C
			}
		case wokeDone:
			l.withdraw(ctx, turn)
			l.shared.hub.disband(w.train)
			return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
		}
	}
}

// handedOff takes the hold a release gave this waiter. When no replica has
// to acknowledge it, the waiter's entry carried the handle's own lease and
// the release set it in the same step: the message is the grant, and
// nothing more is sent. Otherwise the hand-off set only the short claim
// lease (handoffLease), and a confirmation sets the handle's own lease
// with the WAIT for replicas. ok is false when the claim ran out before
// the confirmation (the waiter keeps waiting).
func (l *Lock) handedOff(ctx context.Context, turn *waitTurn, next string) (ok bool, err error) {
	if !turn.claimed && !l.c.acksNeeded(ctx, l.keys[0]) {
		l.setHold(next, turn.queuedAt)
		// The release set the lease at some time after the waiter's last
		// attempt was sent: its end is known from below only.
		l.watch.granted(ctx, leaseEnd(turn.queuedAt, l.lease), pttlCheck(l.c.rdb, l.name, l.holder))
		l.took(ctx)
		return true, nil
	}
	sent := time.Now()
	ok, err = l.renewWith(ctx, &l.confirmCall)
	if ok && errors.Is(err, ErrNotReplicated) {
		l.giveBack(ctx)
		return false, fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	if err != nil {
		if (errors.Is(err, ErrUncertain) || refused(err)) && l.levels.Load() == 0 {
			l.withdrawUncertain(ctx, nil)
		}
		if refused(err) {
			// The confirmation was refused: the claim was not made ours,
			// and is given back (or runs out with its short lease).
			return false, fmt.Errorf("%w: %w", ErrNotObtained, err)
		}
		return false, err
	}
	if !ok {
		return false, nil
	}
	l.setHold("", turn.queuedAt)
	l.watch.granted(ctx, leaseEnd(sent, l.lease), nil)
	l.took(ctx)
	return true, nil
}

// took counts a level this handle was granted and renews it while held.
func (l *Lock) took(ctx context.Context) {
	l.levels.Add(1)
	if l.watchdog {
		l.shared.acquired(ctx, l)
	}
}

// Refresh restarts the lease now, for handles without a watchdog.
// ErrNotHeld when this handle's holder does not hold the lock.
func (l *Lock) Refresh(ctx context.Context) error {
	if a := actor(ctx, l.owners); a != nil {
		return a.Refresh(ctx)
	}
	if l.err != nil {
		return l.err
	}
	if err := l.settle(ctx); err != nil {
		return err
	}
	sent := time.Now()
	ok, err := l.renew(ctx)
	if err != nil {
		return err
	}
	if !ok {
		l.watch.lose(lostNotHeld)
		return fmt.Errorf("%w: %q by %s", ErrNotHeld, l.name, l.holder)
	}
	l.watch.renewed(leaseEnd(sent, l.lease))
	return nil
}

// tryAcquire runs one attempt: ok, or the holder's remaining lease. With a
// turn the caller is queued when it fails.
func (l *Lock) tryAcquire(ctx context.Context, turn *waitTurn) (ttl time.Duration, ok bool, err error) {
	return l.tryAcquireAt(ctx, turn, time.Now())
}

// tryAcquireAt is tryAcquire whose call is sent after sent (a grant's
// lease then runs at least until sent plus the lease).
func (l *Lock) tryAcquireAt(ctx context.Context, turn *waitTurn, sent time.Time) (ttl time.Duration, ok bool, err error) {
	// A re-entry goes after the pass that granted the hold, if any (a
	// failed pass leaves nothing held: the attempt then starts afresh),
	// and no pass of this handle's hold runs while it is on the wire.
	_ = l.settle(ctx)
	l.passMu.RLock()
	defer l.passMu.RUnlock()
	var cmd *redis.Cmd
	var ack error
	if turn == nil {
		cmd, ack = l.c.callAcked(ctx, &l.tryCall)
	} else {
		queued := "0"
		if turn.queued {
			queued = "1"
		}
		// The lease a hand-off sets: the handle's own when no replica
		// must acknowledge the grant (the waiter then needs no
		// confirmation), else the short claim the waiter confirms.
		handoff := l.lease
		if l.c.acksNeeded(ctx, l.keys[0]) {
			handoff = min(l.lease, handoffLease)
			turn.claimed = true
		}
		argv := append(l.argv[:len(l.argv):len(l.argv)], turn.token, waitEntryTTL.Milliseconds(), handoff.Milliseconds(), queued, turn.clock.waitedMS())
		if turn.behind != "" && !turn.queued {
			argv = append(argv, "", 0, turn.behind) // ARGV[9..10] are the spin lock's
		}
		if l.c.ack == nil {
			cmd = l.c.runScript(ctx, lockAcquireScript, l.keys, argv...)
		} else {
			p := lockAcquireScript.prepare(l.keys, argv...)
			cmd, ack = l.c.callAcked(ctx, &p)
		}
	}
	ms, taken, next, err := acquireReply(cmd)
	if err != nil {
		// The attempt may have added a level this handle does not count
		// (a re-entry whose reply was lost): no pass of this hold, whose
		// count is no longer known (lock_pass.go).
		l.setHold("", time.Time{})
	}
	if taken && ack != nil {
		// Granted on the master, but a failover could lose it: give the
		// level back rather than report a hold no replica confirmed.
		l.giveBack(ctx)
		return 0, false, notReplicated("acquire", l.name, ack)
	}
	if taken {
		if l.levels.Load() > 0 {
			// A re-entry: the same hold, its lease restarted.
			l.extendHold(sent)
		} else {
			l.setHold(next, sent)
		}
		l.watch.granted(ctx, leaseEnd(sent, l.lease), nil)
		l.took(ctx)
		return 0, true, nil
	}
	if errors.Is(err, ErrUncertain) && l.levels.Load() == 0 {
		// The attempt may have taken the lock (or been handed it while
		// queued) with its reply lost: give back what it may hold, so no
		// lease outlives a caller who was told it failed.
		l.withdrawUncertain(ctx, turn)
	}
	if err != nil {
		return 0, false, l.scriptErr("acquire", err)
	}
	return time.Duration(ms) * time.Millisecond, false, nil
}

// acquireReply reads lock_acquire's reply: taken ("OK", or "OK <next>"
// for a hand-off found done, next naming the queue's head), or the
// holder's remaining lease in ms.
func acquireReply(cmd *redis.Cmd) (ms int64, taken bool, next string, err error) {
	if err := cmd.Err(); err != nil {
		return 0, false, "", err
	}
	switch v := cmd.Val().(type) {
	case string:
		if v == "OK" {
			return 0, true, "", nil
		}
		if next, ok := strings.CutPrefix(v, "OK "); ok {
			return 0, true, next, nil
		}
	case int64:
		return v, false, "", nil
	}
	return 0, false, "", fmt.Errorf("unexpected reply %v of lock_acquire", cmd.Val())
}

// renew restarts the lease. A renewal that fewer replicas than required
// confirmed is ok with an error matching ErrNotReplicated: the master has
// it, a failover may not.
func (l *Lock) renew(ctx context.Context) (bool, error) { return l.renewWith(ctx, &l.renewCall) }

func (l *Lock) renewWith(ctx context.Context, p *preparedCall) (bool, error) {
	cmd, ack := l.c.callAcked(ctx, p)
	n, err := cmd.Int64()
	if err != nil {
		return false, l.scriptErr("renew", err)
	}
	if n == 1 && ack != nil {
		return true, fmt.Errorf("store: lock renew %q: %w", l.name, ack)
	}
	return n == 1, nil
}

func (l *Lock) scriptErr(op string, err error) error { return lockScriptErr("lock", op, l.name, err) }

// lockScriptErr is the error of a lock script call of kind on name that
// failed: ErrWrongKind when the key holds another type, ErrNotObtained
// too for an acquire that Redis refused (a replica, OOM).
func lockScriptErr(kind, op, name string, err error) error {
	if isWrongType(err) {
		return fmt.Errorf("store: %s %s %q: %w", kind, op, name, ErrWrongKind)
	}
	if op == "acquire" && refused(err) {
		return fmt.Errorf("%w: store: %s %s %q: %w", ErrNotObtained, kind, op, name, err)
	}
	return fmt.Errorf("store: %s %s %q: %w", kind, op, name, err)
}
