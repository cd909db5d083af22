package store

import (
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

const (
	// DefaultLockLease is every lock kind's default Lease, Redisson's
	// lockWatchdogTimeout: how long a lock outlives a holder that stopped
	// renewing (crashed, partitioned).
	DefaultLockLease = 30 * time.Second
	// DefaultLockRetryInterval is the default RetryInterval of the kinds
	// that wake on release messages (Lock, RWLock, FairLock, FencedLock):
	// it bounds the sleep between two attempts of a waiter when no message
	// arrives, in case one is lost (a redial of the PubSub connection, a
	// lock without expiry, a client that releases without publishing).
	DefaultLockRetryInterval = 5 * time.Second
	// DefaultSpinRetryInterval is a SpinLock's default RetryInterval: it
	// hears of no release, so it tries this often.
	DefaultSpinRetryInterval = 50 * time.Millisecond
	// DefaultTokenRetryInterval is a TokenLock's default RetryInterval:
	// clients of its layout other than store announce no release.
	DefaultTokenRetryInterval = 50 * time.Millisecond
	// MaxOwnerLen bounds LockOptions.Owner for the kinds kept in a hash.
	MaxOwnerLen = 256
)

const (
	// DefaultSpinLease is DefaultLockLease.
	//
	// Deprecated: use DefaultLockLease.
	DefaultSpinLease = DefaultLockLease
	// DefaultTokenLease is DefaultLockLease.
	//
	// Deprecated: use DefaultLockLease.
	DefaultTokenLease = DefaultLockLease
)

// LockOptions tunes a handle of any lock kind: NewLock, NewSpinLock,
// NewRWLock, NewFairLock, NewFencedLock and NewTokenLock all take one. A
// nil *LockOptions, and zero fields, mean the kind's defaults; a field a
// kind has no use for (ThreadWaitTime outside FairLock, Attempts outside
// TokenLock) is ignored by it. Invalid values are reported by the handle's
// first call, with nothing sent to Redis.
type LockOptions struct {
	// Lease is how long the lock outlives a holder that stops renewing it:
	// the expiry every acquire, renewal and Refresh sets. While a handle
	// holds the lock its watchdog renews it every Lease/3 (see NoWatchdog),
	// so Lease is really the time a crashed holder blocks others. Default
	// DefaultLockLease; at least 1ms when set, 3ms for a SpinLock (its
	// renewal timer ticks every Lease/3).
	Lease time.Duration
	// Owner names the holder, and HolderID reports it.
	//
	// In the kinds kept in a hash (all but TokenLock) it is the second half
	// of the holder field "<client-id>:<owner>": handles with the same Owner
	// on one Client are one holder and re-enter each other's lock, like one
	// Java thread in Redisson. Default: random per handle, or the owner
	// WithOwner put in a call's ctx. At most MaxOwnerLen bytes; a read-write
	// lock's must not end in ":write".
	//
	// A TokenLock stores Owner itself as the lock's value: pass another
	// handle's HolderID to refresh or release a lock it took. Default: 16
	// random bytes, URL-safe base64, as bsm/redislock makes them; at most
	// 512 bytes.
	Owner string
	// RetryInterval is the longest a waiting Lock sleeps before trying
	// again: DefaultLockRetryInterval by default for the kinds that wake on
	// release messages, DefaultSpinRetryInterval for a SpinLock (which
	// sleeps exactly this long) and DefaultTokenRetryInterval for a
	// TokenLock. At least 1ms when set for those two.
	RetryInterval time.Duration
	// NoWatchdog keeps the lease fixed: the lock expires Lease after the
	// last acquire or Refresh unless released first (Redisson's
	// lock(leaseTime)). A TokenLock never renews itself: its lease always
	// runs until Refresh.
	NoWatchdog bool
	// ThreadWaitTime is, for a FairLock, how long a waiter keeps its place
	// in the queue without asking again, beyond the holder's remaining
	// lease. A waiting Lock asks at least every ThreadWaitTime/2, so this is
	// how long a crashed waiter can hold up the queue. Default
	// DefaultFairThreadWait; at least 2ms when set.
	ThreadWaitTime time.Duration
	// Attempts bounds a TokenLock's Lock to that many attempts; 0 means no
	// bound but ctx.
	Attempts int
	// Token is a TokenLock's value.
	//
	// Deprecated: use Owner, which a TokenLock stores as its value.
	Token string
}

// SpinLockOptions tunes a SpinLock.
//
// Deprecated: use LockOptions, which it is.
type SpinLockOptions = LockOptions

// TokenLockOptions tunes a TokenLock.
//
// Deprecated: use LockOptions, which it is; Token is Owner there.
type TokenLockOptions = LockOptions

// FairLockOptions tunes a FairLock.
//
// Deprecated: use LockOptions, which it is: set ThreadWaitTime in it
// instead of embedding one.
type FairLockOptions = LockOptions

func (o *LockOptions) getLease() time.Duration {
	if o == nil || o.Lease == 0 {
		return DefaultLockLease
	}
	return o.Lease
}

func (o *LockOptions) getOwner() string {
	if o == nil || o.Owner == "" {
		return randomHex()
	}
	return o.Owner
}

// tokenLockValue is a TokenLock's value: Owner (or the deprecated Token), else
// 16 random bytes.
func (o *LockOptions) tokenLockValue() string {
	switch {
	case o != nil && o.Owner != "":
		return o.Owner
	case o != nil && o.Token != "":
		return o.Token
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// retryInterval is RetryInterval, or def when unset.
func (o *LockOptions) retryInterval(def time.Duration) time.Duration {
	if o == nil || o.RetryInterval == 0 {
		return def
	}
	return o.RetryInterval
}

func (o *LockOptions) getRetryInterval() time.Duration {
	return o.retryInterval(DefaultLockRetryInterval)
}

func (o *LockOptions) getThreadWait() time.Duration {
	if o == nil || o.ThreadWaitTime == 0 {
		return DefaultFairThreadWait
	}
	return o.ThreadWaitTime
}

func (o *LockOptions) watchdog() bool { return o == nil || !o.NoWatchdog }

// validate checks what every kind reads alike; maxOwner is the kind's
// bound on Owner. Kinds add their own rules (SpinLock's lease, FairLock's
// ThreadWaitTime, ...).
func (o *LockOptions) validate(maxOwner int) error {
	if o == nil {
		return nil
	}
	switch {
	case o.Lease < 0:
		return invalid("lease", "must not be negative, got %v", o.Lease)
	case o.Lease > 0 && o.Lease < time.Millisecond:
		return invalid("lease", "must be at least 1ms, got %v", o.Lease)
	case len(o.Owner) > maxOwner:
		return invalid("owner", "must be at most %d bytes, got %d", maxOwner, len(o.Owner))
	case o.RetryInterval < 0:
		return invalid("retry interval", "must not be negative, got %v", o.RetryInterval)
	case o.ThreadWaitTime < 0:
		return invalid("thread wait time", "must not be negative, got %v", o.ThreadWaitTime)
	case o.Attempts < 0:
		return invalid("attempts", "must be 0 (no bound) or more, got %d", o.Attempts)
	case o.Token != "" && o.Owner != "" && o.Token != o.Owner:
		return invalid("token", "is Owner's deprecated name; set Owner only")
	}
	return nil
}

// maxTokenLockValue bounds a TokenLock's value (its Owner).
const maxTokenLockValue = wire.MaxStringValue

// withOwner is opts with Owner set.
func withOwner(opts *LockOptions, owner string) *LockOptions {
	o := LockOptions{Owner: owner}
	if opts != nil {
		o = *opts
		o.Owner = owner
	}
	return &o
}
