package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Redisson's RFencedLock for Go applications, in its wire format (see the
// package doc and fencedlock_acquire.lua): an RLock whose every successful
// acquire also INCRements wire.FencingTokenKey(name) and returns the
// new value. The holder passes the token with each write to the guarded
// resource, which refuses tokens lower than the highest it has seen: a
// holder that lost the lock without noticing (a long GC pause, a lease that
// ran out, a force-unlock) is then refused once the next holder has
// written. The token key is never deleted, by release or force-unlock.
// When it is missing (a new lock, or lost when Redis restarted without
// persistence) the acquire seeds it from Redis TIME in microseconds before
// the INCR, so tokens keep growing across such a loss (as long as the lock
// averaged under a million acquires a second and the clock did not step
// back): the first token of a lock is about 1.8e15, not 1. Redisson clients
// continue above a seeded key; one that is first after the loss restarts at
// 1 (see fencedlock_acquire.lua).
//
// Release, renewal and the watchdog are the RLock's (lock_release.lua,
// lock_renew.lua). Waiting is Redisson's: subscribe to wire.UnlockChannel(name)
// and retry. Take a fenced lock only through fenced handles: a plain Lock
// waiter on the same name could be handed the lock by a release, and that
// hold would carry no new token.

var fencedAcquireScript = newScript("fencedlock_acquire")

// FencedLock is a handle on one fenced lock for one owner.
type FencedLock struct {
	c      *Client
	inner  *Lock // the RLock hold: lease, holder, release, watchdog
	name   string
	err    error
	keys   []string // lock, token, stats
	token  atomic.Int64
	owners *byOwner[*FencedLock] // see Lock.owners
}

// NewFencedLock returns a handle on the fenced lock stored at name; opts as
// for NewLock. Invalid input is reported by the handle's first call, with
// nothing sent to Redis.
func (c *Client) NewFencedLock(name string, opts *LockOptions) *FencedLock {
	c.reg.announce(name)
	inner := c.NewLock(name, &LockOptions{Lease: opts.getLease(), Owner: opts.getOwner(),
		RetryInterval: opts.getRetryInterval(), NoWatchdog: !opts.watchdog()})
	// A random owner is this handle's alone, as for a Lock without one:
	// its last level goes with one HDEL (Lock.release).
	inner.unique = opts == nil || opts.Owner == ""
	f := &FencedLock{c: c, inner: inner, name: name,
		keys: []string{name, wire.FencingTokenKey(name), wire.StatsKey(name)}}
	if opts == nil || opts.Owner == "" {
		f.owners = &byOwner[*FencedLock]{idle: func(h *FencedLock) bool { return h.inner.levels.Load() == 0 },
			make: func(owner string) *FencedLock { return c.NewFencedLock(name, withOwner(opts, owner)) }}
	}
	switch {
	case inner.err != nil:
		f.err = inner.err
	case opts.validate(MaxOwnerLen) != nil:
		f.err = opts.validate(MaxOwnerLen)
	default:
		f.err = c.redissonSlotCheck(name, wire.FencingTokenKey(name))
	}
	return f
}

// Name is the key of the lock.
func (f *FencedLock) Name() string { return f.name }

// HolderID is the hash field this handle holds the lock under.
func (f *FencedLock) HolderID() string { return f.inner.holder }

// Token is the fencing token of this handle's latest successful acquire
// (re-entries included: each takes a new, larger token, as in Redisson);
// 0 before the first.
func (f *FencedLock) Token() int64 { return f.token.Load() }

// CurrentToken reads the last token handed out by anyone (Redisson's
// getToken); 0 when none was.
func (f *FencedLock) CurrentToken(ctx context.Context) (int64, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.c.rdb.Get(ctx, wire.FencingTokenKey(f.name)).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, f.inner.scriptErr("token", err)
	}
	return n, nil
}

// TryLock takes the lock, or re-enters it, without waiting; Token then
// returns the new token. When another holder has it the error is a
// *LockedError (errors.Is ErrNotObtained).
func (f *FencedLock) TryLock(ctx context.Context) error {
	if a := actor(ctx, f.owners); a != nil {
		return a.TryLock(ctx)
	}
	if f.err != nil {
		return f.err
	}
	ttl, ok, err := f.attempt(ctx, nil)
	if err != nil || ok {
		return err
	}
	return &LockedError{Name: f.name, TTL: ttl}
}

// Lock takes the lock, waiting while another holder has it: it retries on
// every release message, when the holder's lease would run out, and at
// least every RetryInterval. When ctx ends first the error matches
// ErrNotObtained and ctx.Err(); when it cannot subscribe to the unlock
// channel, ErrNotObtained with the cause (nothing taken).
//
// An attempt that gets no reply ends Lock (and TryLock) with ErrUncertain.
// When the handle held no level before, the level the attempt may have
// taken is released at once by one lock_release sent once, so no lease
// outlives a caller told it failed. What remains possible: the token the
// attempt may have drawn is spent (tokens only ever grow, so that is
// harmless), and if that release loses its reply too, the level stays
// until its lease runs out (no watchdog renews it). A handle that already
// held levels keeps whatever the attempt did: the caller's next Unlock
// gives back one level.
func (f *FencedLock) Lock(ctx context.Context) error {
	if a := actor(ctx, f.owners); a != nil {
		return a.Lock(ctx)
	}
	if f.err != nil {
		return f.err
	}
	return waitRetrying(ctx, &f.inner.shared.hub, f.inner.unlockCh, f.inner.retryCap,
		func(ctx context.Context, _ bool, clock *waitClock) (time.Duration, bool, error) {
			return f.attempt(ctx, clock)
		}, nil)
}

// Refresh restarts the lease now, as the watchdog's renewal does (waiting
// for replicas like it): for handles made with NoWatchdog, or to extend the
// lease at once. The token stays. ErrNotHeld when this handle's holder does
// not hold the lock.
func (f *FencedLock) Refresh(ctx context.Context) error {
	if a := actor(ctx, f.owners); a != nil {
		return a.Refresh(ctx)
	}
	if f.err != nil {
		return f.err
	}
	return f.inner.Refresh(ctx)
}

// Unlock releases one level; the last deletes the lock (never the token)
// and publishes "0" on redisson_lock__channel:{<name>}. ErrNotHeld (lock untouched)
// when this holder does not hold it.
func (f *FencedLock) Unlock(ctx context.Context) error {
	if a := actor(ctx, f.owners); a != nil {
		return a.Unlock(ctx)
	}
	if f.err != nil {
		return f.err
	}
	return f.inner.Unlock(ctx)
}

// attempt runs one acquire: ok, or the holder's remaining lease. clock is
// the waiting call's (nil for TryLock): a grant after a failed attempt
// records its wait in the lock's stats, as Lock's does.
func (f *FencedLock) attempt(ctx context.Context, clock *waitClock) (time.Duration, bool, error) {
	p := fencedAcquireScript.prepare(f.keys, f.inner.lease.Milliseconds(), f.inner.holder, clock.waitedMS())
	sent := time.Now()
	cmd, ack := f.c.callAcked(ctx, &p)
	res, err := cmd.Int64Slice()
	if err != nil {
		if errors.Is(err, ErrUncertain) && f.inner.levels.Load() == 0 {
			f.inner.withdrawUncertain(ctx, nil)
		}
		return 0, false, f.inner.scriptErr("acquire", err)
	}
	if len(res) != 2 {
		return 0, false, fmt.Errorf("store: fenced lock acquire %q: unexpected reply %v", f.name, res)
	}
	if res[0] == 1 && ack != nil {
		// As Lock's grant: not confirmed by replicas, so given back (the
		// token it drew is spent, which is harmless).
		f.inner.giveBack(ctx)
		return 0, false, notReplicated("acquire", f.name, ack)
	}
	if res[0] == 1 {
		f.token.Store(res[1])
		f.inner.watch.granted(ctx, leaseEnd(sent, f.inner.lease), nil)
		f.inner.levels.Add(1)
		if f.inner.watchdog {
			f.inner.shared.acquired(ctx, f.inner)
		}
		return 0, true, nil
	}
	return time.Duration(res[1]) * time.Millisecond, false, nil
}
