package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Redisson's RFairLock for Go applications, in its wire format (see the
// package doc and fairlock_acquire.lua): the RLock hash plus a queue of
// waiter ids and their deadlines. Only the head of the queue may take a
// free lock, so waiters get it in arrival order whichever client they use;
// a release wakes only the head, on its own channel
// wire.UnlockChannel(name)+":"+<waiter id>. The hold itself is an RLock hold, so
// the Client's watchdog renews it like a Lock's.

var (
	fairAcquireScript  = newScript("fairlock_acquire")
	fairUnlockScript   = newScript("fairlock_unlock")
	fairWithdrawScript = newScript("fairlock_withdraw")
)

// DefaultFairThreadWait is Redisson's threadWaitTime since 3.13.3 (5 s
// before): how long past the holder's lease a queued waiter that stopped
// asking keeps its place. Redisson clients on the same lock subtract it
// from every waiter's deadline when they acquire, so a smaller value here
// than theirs would drop lockwarden's waiters.
const DefaultFairThreadWait = 300 * time.Second

// FairLock is a handle on one fair lock for one owner. Handles with the
// same Owner on one Client are one holder and one waiter: they share a
// place in the queue (if one of them gives up waiting, the others queue
// again at the end), as threads of one id would in Redisson.
type FairLock struct {
	c        *Client
	inner    *Lock // the RLock hold: lease, holder, watchdog
	name     string
	holder   string
	wait     time.Duration
	retryCap time.Duration
	err      error

	keys    []string            // lock, queue, deadlines, stats
	relKeys []string            // lock, queue, deadlines (fairlock_unlock)
	prefix  string              // waiters' channel prefix, wire.UnlockChannel(name)
	channel string              // this holder's own channel
	owners  *byOwner[*FairLock] // see Lock.owners
}

// NewFairLock returns a handle on the fair lock stored at name. Invalid
// input is reported by the handle's first call, with nothing sent to Redis.
func (c *Client) NewFairLock(name string, opts *LockOptions) *FairLock {
	c.reg.announce(name)
	wait := opts.getThreadWait()
	inner := c.NewLock(name, &LockOptions{Lease: opts.getLease(), Owner: opts.getOwner(),
		RetryInterval: opts.getRetryInterval(), NoWatchdog: !opts.watchdog()})
	f := &FairLock{c: c, inner: inner, name: name, holder: inner.holder, wait: wait,
		retryCap: min(opts.getRetryInterval(), wait/2), prefix: wire.UnlockChannel(name)}
	f.channel = f.prefix + ":" + f.holder
	if opts == nil || opts.Owner == "" {
		f.owners = &byOwner[*FairLock]{idle: func(h *FairLock) bool { return h.inner.levels.Load() == 0 },
			make: func(owner string) *FairLock { return c.NewFairLock(name, withOwner(opts, owner)) }}
	}
	f.keys = []string{name, wire.FairLockQueueKey(name), wire.FairLockTimeoutKey(name), wire.StatsKey(name)}
	f.relKeys = f.keys[:3]
	switch {
	case inner.err != nil:
		f.err = inner.err
	case opts.validate(MaxOwnerLen) != nil:
		f.err = opts.validate(MaxOwnerLen)
	case wait < 2*time.Millisecond:
		f.err = invalid("thread wait time", "must be at least 2ms, got %v", wait)
	default:
		f.err = c.redissonSlotCheck(name, wire.FairLockQueueKey(name))
	}
	return f
}

// Name is the key of the lock.
func (f *FairLock) Name() string { return f.name }

// HolderID is the hash field this handle holds the lock under and its id
// in the queue, "<client-id>:<owner>".
func (f *FairLock) HolderID() string { return f.holder }

// TryLock takes the lock, or re-enters it, without waiting and without
// queueing: it fails while another holder has it or an earlier waiter is
// queued. The error is then a *LockedError (errors.Is ErrNotObtained).
func (f *FairLock) TryLock(ctx context.Context) error {
	if a := actor(ctx, f.owners); a != nil {
		return a.TryLock(ctx)
	}
	if f.err != nil {
		return f.err
	}
	if err := f.c.decidePubsub(ctx); err != nil {
		return notObtained(err)
	}
	ttl, ok, err := f.attempt(ctx, false, nil)
	if err != nil || ok {
		return err
	}
	return &LockedError{Name: f.name, TTL: ttl}
}

// Lock takes the lock in arrival order, waiting while it cannot. The
// handle subscribes to its own channel before it queues, so the release
// that makes it the next holder always reaches it. It attempts again when
// woken, when the hint of the last attempt runs out, and at least every
// min(RetryInterval, ThreadWaitTime/2), which keeps its place in the queue
// fresh. When ctx ends first it leaves the queue and the error matches
// ErrNotObtained and ctx.Err(); when it cannot subscribe to its channel,
// ErrNotObtained with the cause (it was not queued).
//
// An attempt that gets no reply ends Lock (and TryLock) with ErrUncertain.
// When the handle held no level before, what the attempt may have taken is
// given back at once: one fairlock_unlock sent once releases a level it may
// have taken (a no-op when it took none), and a waiting Lock then leaves
// the queue (fairlock_withdraw, also sent once). What remains possible: if
// those lose their replies too, the level stays until its lease runs out
// (no watchdog renews it) and the queue entry until ThreadWaitTime. A
// handle that already held levels keeps whatever the attempt did.
func (f *FairLock) Lock(ctx context.Context) error {
	if a := actor(ctx, f.owners); a != nil {
		return a.Lock(ctx)
	}
	if f.err != nil {
		return f.err
	}
	if err := f.c.decidePubsub(ctx); err != nil {
		return notObtained(err)
	}
	return waitRetrying(ctx, &f.inner.shared.hub, f.channel, f.retryCap, f.attempt, f.withdraw)
}

// Refresh restarts the lease now, as the watchdog's renewal does: for
// handles made with NoWatchdog, or to extend the lease at once. ErrNotHeld
// when this handle's holder does not hold the lock.
func (f *FairLock) Refresh(ctx context.Context) error {
	if a := actor(ctx, f.owners); a != nil {
		return a.Refresh(ctx)
	}
	if f.err != nil {
		return f.err
	}
	return f.inner.Refresh(ctx)
}

// Unlock releases one level; the last deletes the lock and wakes the waiter
// at the head of the queue. ErrNotHeld (lock untouched) when this holder
// does not hold it.
func (f *FairLock) Unlock(ctx context.Context) error {
	if a := actor(ctx, f.owners); a != nil {
		return a.Unlock(ctx)
	}
	if f.err != nil {
		return f.err
	}
	if err := f.c.decidePubsub(ctx); err != nil {
		return err
	}
	// With the stats key, a release of a hold that already ended is
	// recorded as late.
	res, err := f.c.runScript(ctx, fairUnlockScript, f.keys,
		f.inner.lease.Milliseconds(), f.holder, f.prefix, unlockMessage, f.c.pubsub).Int64()
	if errors.Is(err, redis.Nil) {
		f.inner.levels.Store(0)
		f.inner.watch.lose(lostNotHeld)
		return fmt.Errorf("%w: %q by %s", ErrNotHeld, f.name, f.holder)
	}
	if err != nil {
		f.inner.releaseUnknown()
		return f.inner.scriptErr("unlock", err)
	}
	if f.inner.levels.Add(-1) <= 0 || res == 1 {
		f.inner.watch.released()
	}
	if f.inner.watchdog {
		f.inner.shared.released(f.inner, res == 1)
	}
	return nil
}

// attempt runs one acquire: ok, or how long waiting is worth. queue puts
// the holder in (or keeps it in) the queue when it cannot take the lock.
func (f *FairLock) attempt(ctx context.Context, queue bool, clock *waitClock) (time.Duration, bool, error) {
	q := "0"
	if queue {
		q = "1"
	}
	sent := time.Now()
	ms, err := f.c.runScript(ctx, fairAcquireScript, f.keys,
		f.inner.lease.Milliseconds(), f.holder, f.wait.Milliseconds(), q, clock.waitedMS()).Int64()
	if errors.Is(err, redis.Nil) {
		f.inner.watch.granted(ctx, leaseEnd(sent, f.inner.lease), nil)
		f.inner.levels.Add(1)
		if f.inner.watchdog {
			f.inner.shared.acquired(ctx, f.inner)
		}
		return 0, true, nil
	}
	if err != nil {
		if errors.Is(err, ErrUncertain) && f.inner.levels.Load() == 0 {
			f.withdrawUncertain(ctx)
		}
		return 0, false, f.inner.scriptErr("acquire", err)
	}
	return time.Duration(ms) * time.Millisecond, false, nil
}

// withdraw takes a waiter that gave up out of the queue, so the next one
// does not wait ThreadWaitTime for it.
func (f *FairLock) withdraw(ctx context.Context) {
	_ = f.c.runScript(ctx, fairWithdrawScript, f.keys[:3], f.holder, f.prefix, unlockMessage, f.c.pubsub, f.wait.Milliseconds()).Err()
}

// withdrawUncertain gives back the level an attempt whose reply was lost
// may have taken, when the handle held none before: the unlock is sent
// once and changes nothing when this holder holds no level. A queue entry
// the attempt may have made is left to the waiting Lock's withdraw.
func (f *FairLock) withdrawUncertain(ctx context.Context) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = f.c.runScript(wctx, fairUnlockScript, f.relKeys,
		f.inner.lease.Milliseconds(), f.holder, f.prefix, unlockMessage, f.c.pubsub).Err()
}
