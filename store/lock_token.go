package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Token locks in the layout of redsync and bsm/redislock: a string key
// SET NX PX to a random value, released and refreshed only by whoever
// holds that value (compare-and-delete, compare-and-pexpire). Strings carry
// no marker, so the console lists them by their announcement (registry.go)
// or a configured pattern, and shows the value as the holder.

var (
	tokenLockObtainScript  = newScript("tokenlock_obtain")
	tokenLockRefreshScript = newScript("tokenlock_refresh")
	tokenLockReleaseScript = newScript("tokenlock_release")
)

// TokenLock is one holding of a token lock.
type TokenLock struct {
	c        *Client
	name     string
	value    string
	lease    time.Duration
	retry    time.Duration
	attempts int
	err      error
	// watch tells the caller when a hold ends without its release (lost.go).
	watch leaseWatch
}

// NewTokenLock returns a handle on the token lock stored at name, holding
// opts.Owner (default: a random value) while it has the lock. Invalid input
// is reported by the handle's first call, with nothing sent to Redis.
func (c *Client) NewTokenLock(name string, opts *LockOptions) *TokenLock {
	c.reg.announceAs(name, wire.AnnounceTokenLock)
	t := &TokenLock{c: c, name: name, value: opts.tokenLockValue(), lease: opts.getLease(),
		retry: opts.retryInterval(DefaultTokenRetryInterval)}
	if opts != nil {
		t.attempts = opts.Attempts
	}
	switch {
	case validateName(name) != nil:
		t.err = validateName(name)
	case opts.validate(maxTokenLockValue) != nil:
		t.err = opts.validate(maxTokenLockValue)
	case len(t.value) > maxTokenLockValue:
		t.err = invalid("owner", "must be 1 to %d bytes, got %d", maxTokenLockValue, len(t.value))
	case t.retry < time.Millisecond:
		t.err = invalid("retry interval", "must be at least 1ms, got %v", t.retry)
	}
	return t
}

// Name is the lock's key.
func (t *TokenLock) Name() string { return t.name }

// HolderID is the value the lock holds while this handle has it: its
// Owner, or the random value it was made with. The console shows it as the
// holder; a handle made with it as Owner refreshes and releases the lock
// too.
func (t *TokenLock) HolderID() string { return t.value }

// TryLock takes the lock for the lease if it is free (or already holds
// this handle's value: the lease restarts). When another value holds it
// the error is a *LockedError with that holder's remaining lease
// (errors.Is ErrNotObtained).
func (t *TokenLock) TryLock(ctx context.Context) error { return t.try(ctx, nil) }

// try is one attempt; a waiting Lock passes its clock (wait_clock.go).
func (t *TokenLock) try(ctx context.Context, clock *waitClock) error {
	if t.err != nil {
		return t.err
	}
	keys, argv := []string{t.name, wire.StatsKey(t.name), wire.HeldKey(t.name)}, []any{t.value, t.lease.Milliseconds()}
	if clock != nil {
		keys, argv = append(keys, wire.PollWaitersKey(t.name)), append(argv, clock.pollArgs()...)
	}
	sent := time.Now()
	res, err := t.c.runScript(ctx, tokenLockObtainScript, keys, argv...).Int64Slice()
	if refused(err) {
		return fmt.Errorf("%w: store: token lock %q: %w", ErrNotObtained, t.name, err)
	}
	if err != nil {
		return fmt.Errorf("store: token lock %q: %w", t.name, bucketRedisErr(err))
	}
	if len(res) == 2 && res[0] == 1 {
		t.watch.granted(ctx, leaseEnd(sent, t.lease), nil)
		return nil
	}
	ttl := time.Duration(-1)
	if len(res) == 2 && res[1] >= 0 {
		ttl = time.Duration(res[1]) * time.Millisecond
	}
	return &LockedError{Name: t.name, TTL: ttl}
}

// Lock tries until it holds the lock, Attempts run out (the last
// *LockedError is returned) or ctx ends (the error matches ErrNotObtained
// and ctx.Err()). After a first attempt it listens on the lock's release
// channel and tries again on every release lockwarden announces there,
// when the holder's lease runs out, and at least every RetryInterval
// (clients of the layout that announce nothing release unheard). When it cannot subscribe the
// error matches ErrNotObtained, with the cause (nothing taken).
func (t *TokenLock) Lock(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	tries := 0
	attempt := func(ctx context.Context, _ bool, clock *waitClock) (time.Duration, bool, error) {
		tries++
		err := t.try(ctx, clock)
		if err == nil || !errors.Is(err, ErrNotObtained) || (t.attempts > 0 && tries >= t.attempts) {
			return 0, err == nil, err
		}
		var le *LockedError
		if errors.As(err, &le) {
			return le.TTL, false, nil
		}
		return -1, false, nil // refused (a replica, OOM): try again later
	}
	return waitRetrying(ctx, &sharedFor(t.c).hub, wire.TokenLockChannel(t.name), t.retry, attempt, nil)
}

// Unlock deletes the lock if it still holds this handle's value.
// ErrNotHeld (nothing changed) when it does not: it expired, and maybe
// someone else holds it now.
func (t *TokenLock) Unlock(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	code, err := t.c.runScript(ctx, tokenLockReleaseScript, []string{t.name, wire.HeldKey(t.name), wire.StatsKey(t.name)},
		t.value, wire.TokenLockChannel(t.name)).Int64()
	if err != nil {
		// The caller meant to end the hold: if it ends with its lease,
		// that is no loss to report.
		t.watch.released()
		return fmt.Errorf("store: token lock %q: %w", t.name, err)
	}
	if code != 1 {
		t.watch.lose(lostNotHeld)
		return fmt.Errorf("%w: %q by %s", ErrNotHeld, t.name, t.value)
	}
	t.watch.released()
	return nil
}

// Refresh restarts the lease if the lock still holds this handle's value;
// ErrNotHeld otherwise.
func (t *TokenLock) Refresh(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	sent := time.Now()
	n, err := t.c.runScript(ctx, tokenLockRefreshScript, []string{t.name, wire.HeldKey(t.name), wire.StatsKey(t.name)},
		t.value, t.lease.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("store: token lock %q: %w", t.name, err)
	}
	if n != 1 {
		t.watch.lose(lostNotHeld)
		return fmt.Errorf("%w: %q by %s", ErrNotHeld, t.name, t.value)
	}
	t.watch.renewed(leaseEnd(sent, t.lease))
	return nil
}
