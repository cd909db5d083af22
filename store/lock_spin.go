package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The spin lock is the try-sleep-retry lock Go code often writes by hand:
// the same hash layout as the reentrant lock (field "<client-id>:<owner>"
// -> reentry count, expiry = lease), taken by the same scripts, but
// waiting the simple way: try, sleep a fixed interval, try again, no
// pub/sub. A renewal timer (unless NoWatchdog) extends the lease every
// lease/3 for as long as the holder's field is still there, and unlock by
// a non-holder fails loudly (ErrNotHeld) instead of touching the lock. The
// console sees it as a reentrant lock, which it is in Redis.

// The spin lock runs the reentrant lock's scripts (lockAcquireScript,
// lockReleaseScript, lockRenewScript). It never queues (every attempt
// passes an empty waiter token), so the reentrant lock's ordered hand-off
// serves its queued waiters before a spinning one; keys and arguments
// follow the headers of lock_acquire.lua and lock_release.lua.

// SpinLock is a handle on one spin-wait lock for one owner.
type SpinLock struct {
	c        *Client
	name     string
	holder   string
	lease    time.Duration
	interval time.Duration
	watchdog bool
	err      error

	owners *byOwner[*SpinLock] // see Lock.owners

	// renewal counts the levels taken through this handle and not
	// released, and renews them.
	renewal renewer
	// watch tells the caller when a hold ends without its release (lost.go).
	watch leaseWatch
}

// NewSpinLock returns a handle on the spin lock stored at name. Invalid
// input is reported by the handle's first call, with nothing sent to Redis.
func (c *Client) NewSpinLock(name string, opts *LockOptions) *SpinLock {
	c.reg.announce(name)
	s := &SpinLock{c: c, name: name, lease: opts.getLease(), interval: opts.retryInterval(DefaultSpinRetryInterval),
		watchdog: opts.watchdog(), holder: c.ID() + ":" + opts.getOwner()}
	if opts == nil || opts.Owner == "" {
		s.owners = &byOwner[*SpinLock]{idle: func(h *SpinLock) bool { return h.levels() == 0 },
			make: func(owner string) *SpinLock { return c.NewSpinLock(name, withOwner(opts, owner)) }}
	}
	switch {
	case validateName(name) != nil:
		s.err = validateName(name)
	case opts.validate(MaxOwnerLen) != nil:
		s.err = opts.validate(MaxOwnerLen)
	case s.lease < 3*time.Millisecond:
		s.err = invalid("lease", "must be at least 3ms (renewal runs every lease/3), got %v", s.lease)
	case s.interval < time.Millisecond:
		s.err = invalid("retry interval", "must be at least 1ms, got %v", s.interval)
	}
	return s
}

// Name is the key of the lock.
func (s *SpinLock) Name() string { return s.name }

// HolderID is the hash field this handle holds the lock under.
func (s *SpinLock) HolderID() string { return s.holder }

// TryLock makes one attempt. When another holder has the lock the error is
// a *LockedError with its remaining lease (errors.Is ErrNotObtained).
func (s *SpinLock) TryLock(ctx context.Context) error {
	if a := actor(ctx, s.owners); a != nil {
		return a.TryLock(ctx)
	}
	return s.try(ctx, nil)
}

// try is one attempt; a waiting Lock passes its clock, so a failed attempt
// shows the waiter in the lock's poll waiters and the grant records the wait.
func (s *SpinLock) try(ctx context.Context, clock *waitClock) error {
	if s.err != nil {
		return s.err
	}
	lease := s.lease.Milliseconds()
	keys := s.keys()
	// No waiter token: a spin lock never queues.
	argv := []any{lease, s.holder, s.c.pubsub}
	if clock != nil {
		keys = append(keys, wire.PollWaitersKey(s.name))
		argv = append(argv, "", "", "", "")
		argv = append(argv, clock.pollArgs()...)
	}
	sent := time.Now()
	ttl, taken, _, err := acquireReply(s.c.runScript(ctx, lockAcquireScript, keys, argv...))
	switch {
	case taken:
		s.watch.granted(ctx, leaseEnd(sent, s.lease), nil)
		s.held(ctx)
		return nil
	case err == nil:
		return &LockedError{Name: s.name, TTL: time.Duration(ttl) * time.Millisecond}
	case isWrongType(err):
		return fmt.Errorf("store: spin lock %q: %w", s.name, ErrWrongKind)
	case refused(err):
		return fmt.Errorf("%w: store: spin lock %q: %w", ErrNotObtained, s.name, err)
	case errors.Is(err, ErrUncertain) && s.levels() == 0:
		s.withdrawUncertain(ctx)
	}
	return fmt.Errorf("store: spin lock %q: %w", s.name, err)
}

// withdrawUncertain releases the level an attempt whose reply was lost may
// have taken, when the handle held none before. The release is sent once
// and changes nothing when this holder holds no level.
func (s *SpinLock) withdrawUncertain(ctx context.Context) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = s.c.runScript(wctx, lockReleaseScript, s.keys(), s.holder, "", s.c.pubsub, s.lease.Milliseconds()).Err()
}

func (s *SpinLock) levels() int { return s.renewal.count() }

// Lock tries every RetryInterval until it holds the lock or ctx ends (then the
// error matches ErrNotObtained and ctx.Err()).
//
// An attempt that gets no reply ends Lock (and TryLock) with ErrUncertain.
// When the handle held no level before, the level the attempt may have
// taken is released at once by one lock_release sent once (a no-op when it
// took none), so no lease outlives a caller told it failed. What remains
// possible: if that release loses its reply too, the level stays until its
// lease runs out (the renewal timer was never started for it). A handle
// that already held levels keeps whatever the attempt did.
func (s *SpinLock) Lock(ctx context.Context) error {
	if a := actor(ctx, s.owners); a != nil {
		return a.Lock(ctx)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// A ctx already over is the wait ending, not a Redis failure.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	clock := newPollClock(s.interval)
	for {
		err := s.try(ctx, clock)
		if !errors.Is(err, ErrNotObtained) {
			return err
		}
		clock.failed = true
		timer.Reset(s.interval)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
		case <-timer.C:
		}
	}
}

// Unlock releases one level; the last deletes the lock (and tells
// reentrant-lock waiters, which a hand-written unlock would not). ErrNotHeld
// when this holder does not hold it; nothing changes then.
func (s *SpinLock) Unlock(ctx context.Context) error {
	if a := actor(ctx, s.owners); a != nil {
		return a.Unlock(ctx)
	}
	if s.err != nil {
		return s.err
	}
	if err := s.c.decidePubsub(ctx); err != nil {
		return err
	}
	res, err := s.c.runScript(ctx, lockReleaseScript, s.keys(), s.holder, "", s.c.pubsub, s.lease.Milliseconds()).Int64()
	if errors.Is(err, redis.Nil) {
		s.renewal.released(true)
		s.watch.lose(lostNotHeld)
		return fmt.Errorf("%w: %q by %s", ErrNotHeld, s.name, s.holder)
	}
	if err != nil {
		// As Lock.releaseUnknown: a last level whose release is unknown is no
		// longer renewed.
		if s.levels() == 1 {
			s.watch.released()
		}
		s.renewal.releasedUncertain()
		return fmt.Errorf("store: spin lock %q: %w", s.name, err)
	}
	s.renewal.released(res >= 1) // 1 deleted, 2 handed to a queued waiter
	if res >= 1 || s.levels() == 0 {
		s.watch.released()
	}
	return nil
}

// Refresh restarts the lease now, as a renewal does: for handles made with
// NoWatchdog, or to extend the lease at once. ErrNotHeld when this handle's
// holder does not hold the lock.
func (s *SpinLock) Refresh(ctx context.Context) error {
	if a := actor(ctx, s.owners); a != nil {
		return a.Refresh(ctx)
	}
	if s.err != nil {
		return s.err
	}
	n, err := s.c.runScript(ctx, lockRenewScript, []string{s.name}, s.lease.Milliseconds(), s.holder, "1").Int64()
	if err != nil {
		return fmt.Errorf("store: spin lock %q: %w", s.name, err)
	}
	if n != 1 {
		return fmt.Errorf("%w: %q by %s", ErrNotHeld, s.name, s.holder)
	}
	return nil
}

// keys are the reentrant lock's: the hash, its stats ring, and its waiter
// queue and entries (see lock_wait.go).
func (s *SpinLock) keys() []string {
	return []string{s.name, wire.StatsKey(s.name), wire.LockQueueKey(s.name), wire.LockEntriesKey(s.name)}
}

// held counts a level and starts the renewal on the first one; without a
// watchdog the level is only counted.
func (s *SpinLock) held(ctx context.Context) {
	if !s.watchdog {
		s.renewal.held(nil)
		return
	}
	s.renewal.held(func(stop chan struct{}) { s.renew(context.WithoutCancel(ctx), stop) })
}

// renew is the renewal timer: every lease/3, extend the lease if the field is
// still there; stop for good the first time it is not.
func (s *SpinLock) renew(ctx context.Context, stop chan struct{}) {
	t := time.NewTicker(s.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, s.lease/3)
		sent := time.Now()
		n, err := s.c.runScript(rctx, lockRenewScript, s.keys()[:2], s.lease.Milliseconds(), s.holder, "1").Int64()
		cancel()
		switch {
		case err == nil && n == 1:
			s.watch.renewed(leaseEnd(sent, s.lease))
		case err == nil && n == 0:
			s.renewal.lost(stop)
			s.watch.lose(lostGone)
			return
		case errors.Is(err, redis.ErrClosed):
			s.renewal.lost(stop)
			s.watch.lose(lostClosed)
			return
		}
	}
}
