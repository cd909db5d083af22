package faulttest

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store"
)

// Every call the suite makes into store's lock and limiter handles is in
// this file, so a change of store's API is followed here and nowhere else.

// locker is one holder's handle on one lock.
type locker interface {
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
}

// fenced is a locker whose grants carry a fencing token.
type fenced interface{ Token() int64 }

// lockKind builds a holder's handle on the lock at key.
type lockKind struct {
	name string
	// reentrant kinds take a second level inside the critical section and
	// release it before the counter is touched: a release applied twice
	// would free the lock under the holder, which the checker sees.
	reentrant bool
	// readers: this many extra workers take the read side (RWLock only).
	readers int
	// clients, when set, is how many store Clients the workers share
	// (worker i uses Client i mod clients); otherwise each has its own.
	clients int
	newLock func(c *store.Client, key string) locker
	newRead func(c *store.Client, key string) locker
}

// lease of every lock under test, without a watchdog where the kind allows
// it, so a grant's expiry is known: call start + lease.
const lease = time.Second

// spinLease is the spin lock's (it always renews, every lease/3).
const spinLease = 1500 * time.Millisecond

func lockOpts() *store.LockOptions {
	return &store.LockOptions{Lease: lease, NoWatchdog: true, RetryInterval: 100 * time.Millisecond}
}

var lockKinds = []lockKind{
	{name: "lock", reentrant: true, newLock: func(c *store.Client, key string) locker {
		return c.NewLock(key, lockOpts())
	}},
	// The same lock with its workers on two Clients: a release then mostly
	// passes the lock in process to a waiter of its own Client
	// (store/lock_pass.go), which lends the releaser's hold until Redis
	// records the pass.
	{name: "lock-shared", reentrant: true, clients: 2, newLock: func(c *store.Client, key string) locker {
		return c.NewLock(key, lockOpts())
	}},
	{name: "fair", reentrant: true, newLock: func(c *store.Client, key string) locker {
		o := lockOpts()
		o.ThreadWaitTime = time.Second
		return c.NewFairLock(key, o)
	}},
	{name: "fenced", reentrant: true, newLock: func(c *store.Client, key string) locker {
		return c.NewFencedLock(key, lockOpts())
	}},
	{name: "rw", reentrant: true, readers: 4,
		newLock: func(c *store.Client, key string) locker { return c.NewRWLock(key, lockOpts()).Writer() },
		newRead: func(c *store.Client, key string) locker { return c.NewRWLock(key, lockOpts()).Reader() },
	},
	{name: "spin", reentrant: true, newLock: func(c *store.Client, key string) locker {
		return c.NewSpinLock(key, &store.LockOptions{Lease: spinLease, RetryInterval: 2 * time.Millisecond})
	}},
	{name: "token", newLock: func(c *store.Client, key string) locker {
		return tokenLocker{c.NewTokenLock(key, &store.LockOptions{Lease: lease, RetryInterval: 2 * time.Millisecond})}
	}},
}

// leaseOf is the lease each acquire of kind sets (the spin lock renews
// it while held; the checker does not count on that).
func leaseOf(kind string) time.Duration {
	if kind == "spin" {
		return spinLease
	}
	return lease
}

// token is the fencing token of l's latest grant, 0 for unfenced kinds.
func token(l locker) int64 {
	if f, ok := l.(fenced); ok {
		return f.Token()
	}
	return 0
}

// documented are the errors store promises its callers (errors.go).
var documented = []error{
	store.ErrUncertain, store.ErrNotObtained, store.ErrNotHeld, store.ErrRateLimited, store.ErrRedissonMode,
	store.ErrNotConfigured, store.ErrModify, store.ErrWrongKind, store.ErrInvalid,
	context.Canceled, context.DeadlineExceeded,
}

// documentedKind names the first documented error err matches, "" for
// none.
func documentedKind(err error) string {
	for _, d := range documented {
		if errors.Is(err, d) {
			return strings.TrimPrefix(d.Error(), "store: ")
		}
	}
	return ""
}

func isDocumented(err error) bool {
	for _, d := range documented {
		if errors.Is(err, d) {
			return true
		}
	}
	return false
}

type tokenLocker struct{ t *store.TokenLock }

func (l tokenLocker) Lock(ctx context.Context) error {
	return l.t.Lock(ctx)
}

func (l tokenLocker) Unlock(ctx context.Context) error { return l.t.Unlock(ctx) }

// limiter is one caller's handle on one limiter: admit says whether one
// permit was granted.
type limiter interface {
	admit(ctx context.Context) (bool, error)
}

// limiterKind builds a limiter and says its bound: the most admissions any
// 1 s window may see (capacity + refill in that second); and its floor:
// the admissions a freshly set up limiter grants at once (a full bucket, a
// window's rate), which it must reach after every fault.
type limiterKind struct {
	name  string
	bound int
	floor int
	setup func(ctx context.Context, c *store.Client, key string) error
	open  func(c *store.Client, key string) limiter
}

// Limits: small enough that 16 callers hit them all the time.
const (
	bucketCapacity = 20
	bucketPerSec   = 50 // IntervalMS 20
	windowRate     = 40
)

var limiterKinds = []limiterKind{
	{name: "bucket", bound: bucketCapacity + bucketPerSec, floor: bucketCapacity,
		setup: func(ctx context.Context, c *store.Client, key string) error {
			return c.NewTokenBucket(key, nil).TrySetRate(ctx, store.TokenBucketConfig{Capacity: bucketCapacity, IntervalMS: 1000.0 / bucketPerSec, Initial: bucketCapacity})
		},
		open: func(c *store.Client, key string) limiter { return bucketLimiter{c.NewTokenBucket(key, nil)} }},
	{name: "redisson", bound: windowRate + windowRate, floor: windowRate,
		setup: func(ctx context.Context, c *store.Client, key string) error {
			_, err := c.NewRedissonLimiter(key, nil).TrySetRate(ctx, store.RateOverall, windowRate, time.Second)
			return err
		},
		open: func(c *store.Client, key string) limiter { return redissonLimiter{c.NewRedissonLimiter(key, nil)} }},
	// A fixed 1 s window admits limit in each window, so a sliding second
	// straddling a boundary may see two windows' worth.
	{name: "counter", bound: windowRate + windowRate, floor: windowRate,
		setup: func(context.Context, *store.Client, string) error { return nil },
		open: func(c *store.Client, key string) limiter {
			return counterLimiter{c.NewCounter(key, &store.LimiterOptions{Limit: windowRate, Window: time.Second})}
		}},
}

type bucketLimiter struct{ b *store.TokenBucket }

func (l bucketLimiter) admit(ctx context.Context) (bool, error) {
	res, err := l.b.TryAcquire(ctx, 1)
	return err == nil && res.Allowed, err
}

type redissonLimiter struct{ l *store.RedissonLimiter }

func (l redissonLimiter) admit(ctx context.Context) (bool, error) {
	res, err := l.l.TryAcquire(ctx, 1)
	return err == nil && res.Allowed, err
}

type counterLimiter struct{ k *store.Counter }

func (l counterLimiter) admit(ctx context.Context) (bool, error) {
	h, err := l.k.TryAcquire(ctx, 1)
	return err == nil && h.Allowed, err
}
