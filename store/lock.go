package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/redis/go-redis/v9"
)

// The reentrant lock speaks Redisson's RLock wire format (seed 000), so Go
// applications, Java applications using Redisson and the console all see and
// respect the same locks: hash <name>, one field "<client-id>:<owner>" with
// the reentry count, PEXPIRE lease, "0" published on UnlockChannel(name)
// when the last level is released.

var (
	lockAcquireScript      = redis.NewScript(luascripts.Source("lock_acquire"))
	lockReleaseScript      = redis.NewScript(luascripts.Source("lock_release"))
	lockRenewScript        = redis.NewScript(luascripts.Source("lock_renew"))
	lockForceReleaseScript = redis.NewScript(luascripts.Source("lock_force_release"))
)

// unlockMessage is what Redisson's LockPubSub reads as "unlocked".
const unlockMessage = "0"

const (
	// DefaultLockLease is Redisson's lockWatchdogTimeout: how long a lock
	// outlives a holder that stopped renewing (crashed, partitioned).
	DefaultLockLease = 30 * time.Second
	// DefaultLockRetryCap bounds the sleep between two attempts of a waiter
	// when no unlock message arrives, in case one is lost (a redial of the
	// PubSub connection, a lock without expiry, a client that releases
	// without publishing).
	DefaultLockRetryCap = 5 * time.Second
	// MaxOwnerLen bounds LockOptions.Owner.
	MaxOwnerLen = 256
)

// LockOptions tunes a lock handle. A nil *LockOptions, and zero fields, mean
// the defaults.
type LockOptions struct {
	// Lease is the PEXPIRE set on every acquire. While a handle holds the
	// lock a watchdog renews it every Lease/3, so Lease is really the time
	// a crashed holder blocks others. Default DefaultLockLease; must not be
	// negative, and at least a millisecond when set.
	Lease time.Duration
	// Owner is the second half of the holder field. Handles with the same
	// Owner on the same Client are one holder (they re-enter each other's
	// lock, like one Java thread). Default: random per handle.
	Owner string
	// RetryCap is the longest a waiter in Lock sleeps without a message
	// before trying again. Default DefaultLockRetryCap.
	RetryCap time.Duration
	// NoWatchdog keeps the lease fixed: the lock expires Lease after the
	// last acquire unless released first (Redisson's lock(leaseTime)).
	NoWatchdog bool
}

func (o *LockOptions) getLease() time.Duration {
	if o == nil || o.Lease == 0 {
		return DefaultLockLease
	}
	return o.Lease
}

func (o *LockOptions) getOwner() string {
	if o == nil || o.Owner == "" {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
		return hex.EncodeToString(b[:])
	}
	return o.Owner
}

func (o *LockOptions) getRetryCap() time.Duration {
	if o == nil || o.RetryCap == 0 {
		return DefaultLockRetryCap
	}
	return o.RetryCap
}

func (o *LockOptions) watchdog() bool { return o == nil || !o.NoWatchdog }

func (o *LockOptions) validate() error {
	if o == nil {
		return nil
	}
	switch {
	case o.Lease < 0:
		return invalid("lease", "must not be negative, got %v", o.Lease)
	case o.Lease > 0 && o.Lease < time.Millisecond:
		return invalid("lease", "must be at least 1ms, got %v", o.Lease)
	case len(o.Owner) > MaxOwnerLen:
		return invalid("owner", "must be at most %d bytes, got %d", MaxOwnerLen, len(o.Owner))
	case o.RetryCap < 0:
		return invalid("retry cap", "must not be negative, got %v", o.RetryCap)
	}
	return nil
}

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
}

// NewLock returns a handle on the lock stored at name. Invalid input is
// reported by the handle's first call, with nothing sent to Redis.
func (c *Client) NewLock(name string, opts *LockOptions) *Lock {
	l := &Lock{c: c, name: name, lease: opts.getLease(), retryCap: opts.getRetryCap(), watchdog: opts.watchdog()}
	if l.err = validateName(name); l.err == nil {
		l.err = opts.validate()
	}
	l.holder = c.ID() + ":" + opts.getOwner()
	l.shared = sharedFor(c)
	return l
}

// Name is the key of the lock.
func (l *Lock) Name() string { return l.name }

// HolderID is the hash field this handle holds the lock under,
// "<client-id>:<owner>", as the console shows it.
func (l *Lock) HolderID() string { return l.holder }

// LockedError reports that another holder has the lock. It matches
// ErrNotObtained with errors.Is.
type LockedError struct {
	Name string
	// TTL is the remaining lease of the current holder; negative when the
	// lock has no expiry (written by a client that set none).
	TTL time.Duration
}

func (e *LockedError) Error() string {
	if e.TTL < 0 {
		return fmt.Sprintf("%v: %q is held by another owner (no expiry)", ErrNotObtained, e.Name)
	}
	return fmt.Sprintf("%v: %q is held by another owner for %v more", ErrNotObtained, e.Name, e.TTL)
}

func (e *LockedError) Unwrap() error { return ErrNotObtained }

// TryLock takes the lock, or re-enters it, without waiting. When another
// holder has it the error is a *LockedError (errors.Is ErrNotObtained).
func (l *Lock) TryLock(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	ttl, ok, err := l.tryAcquire(ctx)
	if err != nil || ok {
		return err
	}
	return &LockedError{Name: l.name, TTL: ttl}
}

// Lock takes the lock, waiting while another holder has it. A waiter sleeps
// until the holder's unlock message or until its lease would run out
// (capped by RetryCap), then tries again. When ctx ends first the error
// matches both ErrNotObtained and ctx.Err() with errors.Is.
//
// Like Redisson, the first attempt goes out before subscribing, so an
// uncontended lock costs one round trip; every attempt that can lead to a
// sleep is made only after Redis confirmed the subscription, so no unlock
// can slip between the attempt and the sleep.
func (l *Lock) Lock(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	if _, ok, err := l.tryAcquire(ctx); err != nil || ok {
		return err
	}
	w, err := l.shared.hub.join(ctx, UnlockChannel(l.name))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
		}
		return fmt.Errorf("store: lock %q: subscribe to unlock channel: %w", l.name, err)
	}
	defer w.leave(ctx)

	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for {
		ttl, ok, err := l.tryAcquire(ctx)
		if err != nil || ok {
			return err
		}
		wait := ttl
		if wait < 0 || wait > l.retryCap {
			wait = l.retryCap
		}
		timer.Reset(max(wait, time.Millisecond))
		select {
		case <-w.C:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
		}
	}
}

// Unlock releases one level of reentry; the last level deletes the lock and
// wakes waiters. ErrNotHeld (lock untouched) when this handle's holder does
// not hold it, e.g. after its lease ran out or it was force-unlocked.
func (l *Lock) Unlock(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	res, err := lockReleaseScript.Run(ctx, l.c.rdb, []string{l.name},
		l.lease.Milliseconds(), l.holder, UnlockChannel(l.name), unlockMessage).Int64()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: %q by %s", ErrNotHeld, l.name, l.holder)
	}
	if err != nil {
		return l.scriptErr("unlock", err)
	}
	if l.watchdog {
		l.shared.released(l, res == 1)
	}
	return nil
}

// Refresh restarts the lease now, for handles without a watchdog.
// ErrNotHeld when this handle's holder does not hold the lock.
func (l *Lock) Refresh(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	ok, err := l.renew(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q by %s", ErrNotHeld, l.name, l.holder)
	}
	return nil
}

// tryAcquire runs one attempt: ok, or the holder's remaining lease.
func (l *Lock) tryAcquire(ctx context.Context) (ttl time.Duration, ok bool, err error) {
	ms, err := lockAcquireScript.Run(ctx, l.c.rdb, []string{l.name, StatsKey(l.name)},
		l.lease.Milliseconds(), l.holder).Int64()
	if errors.Is(err, redis.Nil) {
		if l.watchdog {
			l.shared.acquired(ctx, l)
		}
		return 0, true, nil
	}
	if err != nil {
		return 0, false, l.scriptErr("acquire", err)
	}
	return time.Duration(ms) * time.Millisecond, false, nil
}

func (l *Lock) renew(ctx context.Context) (bool, error) {
	n, err := lockRenewScript.Run(ctx, l.c.rdb, []string{l.name}, l.lease.Milliseconds(), l.holder).Int64()
	if err != nil {
		return false, l.scriptErr("renew", err)
	}
	return n == 1, nil
}

func (l *Lock) scriptErr(op string, err error) error {
	if isWrongType(err) {
		return fmt.Errorf("store: lock %s %q: %w", op, l.name, ErrWrongKind)
	}
	return fmt.Errorf("store: lock %s %q: %w", op, l.name, err)
}

func isWrongType(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE")
}

// The watchdog. Renewal is per holder, not per handle: handles sharing an
// Owner re-enter one hold, and one goroutine keeps it alive until the last
// level is released.

type renewKey struct{ name, holder string }

type renewal struct {
	holds int // successful acquires minus releases seen through this Client
	stop  chan struct{}
}

func (s *lockShared) acquired(ctx context.Context, l *Lock) {
	k := renewKey{l.name, l.holder}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.renewals[k]; r != nil {
		r.holds++
		return
	}
	r := &renewal{holds: 1, stop: make(chan struct{})}
	s.renewals[k] = r
	// The lock outlives the call that took it, so the watchdog must not end
	// with that call's ctx.
	go s.watch(context.WithoutCancel(ctx), l, k, r)
}

// released stops the watchdog once the last level is gone. A release of the
// last level racing a new acquire by the same holder leaves holds above zero
// either way the two updates are ordered, so the new hold keeps its watchdog.
func (s *lockShared) released(l *Lock, last bool) {
	k := renewKey{l.name, l.holder}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.renewals[k]
	if r == nil {
		return
	}
	r.holds--
	if last && r.holds <= 0 {
		delete(s.renewals, k)
		close(r.stop)
	}
}

func (s *lockShared) watch(ctx context.Context, l *Lock, k renewKey, r *renewal) {
	every := l.lease / 3
	t := time.NewTicker(every)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		ok, err := l.renew(rctx)
		cancel()
		switch {
		case err == nil && ok:
			lastOK = time.Now()
			continue
		case err == nil && !ok:
			// Expired, force-unlocked or taken over: nothing left to keep.
		case errors.Is(err, redis.ErrClosed), time.Since(lastOK) >= l.lease:
			// The client is gone, or the lease ran out while Redis could
			// not be reached: the lock is lost either way.
		default:
			continue // transient; the next tick retries
		}
		s.mu.Lock()
		if s.renewals[k] == r {
			delete(s.renewals, k)
		}
		s.mu.Unlock()
		return
	}
}

// renewing reports whether a watchdog runs for name/holder (for tests and
// diagnostics).
func (s *lockShared) renewing(name, holder string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.renewals[renewKey{name, holder}] != nil
}
