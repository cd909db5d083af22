package store

import "time"

const (
	// DefaultLockLease is Redisson's lockWatchdogTimeout: how long a lock
	// outlives a holder that stopped renewing (crashed, partitioned).
	DefaultLockLease = 30 * time.Second
	// DefaultLockRetryInterval bounds the sleep between two attempts of a
	// waiter when no unlock message arrives, in case one is lost (a redial
	// of the PubSub connection, a lock without expiry, a client that
	// releases without publishing).
	DefaultLockRetryInterval = 5 * time.Second
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
	// RetryInterval is the longest a waiter in Lock sleeps without a
	// message before trying again. Default DefaultLockRetryInterval.
	RetryInterval time.Duration
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
		return randomHex()
	}
	return o.Owner
}

func (o *LockOptions) getRetryInterval() time.Duration {
	if o == nil || o.RetryInterval == 0 {
		return DefaultLockRetryInterval
	}
	return o.RetryInterval
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
	case o.RetryInterval < 0:
		return invalid("retry interval", "must not be negative, got %v", o.RetryInterval)
	}
	return nil
}

// withOwner is opts with Owner set.
func withOwner(opts *LockOptions, owner string) *LockOptions {
	o := LockOptions{Owner: owner}
	if opts != nil {
		o = *opts
		o.Owner = owner
	}
	return &o
}
