package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
)

// The demo's objects. Names only; trafficConfig.Prefix goes in front so
// tests can run the traffic under their own key prefix.
const (
	demoAPI   = "demo:api"
	demoLogin = "demo:login"
	demoStuck = "demo:lock:stuck"
	// demoTokenLock is a redsync / bsm/redislock style lock: SET NX PX to
	// a random token, released by compare-and-delete.
	demoTokenLock = "demo:token:report"
	// demoHits is a per-IP access counter (INCR, EXPIRE on the
	// first hit), for one client address from the documentation range.
	demoHits = "demo:hits:203.0.113.7"
	// demoHitLimit hits per demoHitWindow; the client hits a little faster
	// (one per 250 ms, 40 per window), so the end of each window rejects.
	demoHitLimit  = 30
	demoHitWindow = 10 * time.Second
	demoHitEvery  = 250 * time.Millisecond
	// demoPartner is a Redisson (3.34, sliding window) rate limiter of 20
	// permits per second shared by three callers asking for 30.
	demoPartner = "demo:partner"
	// demoRW is a Redisson read-write lock: three readers share it, a
	// writer takes it alone now and then.
	demoRW = "demo:rw:catalog"
	// demoFair is a Redisson fair lock four workers queue for, so the
	// console shows its waiters in arrival order.
	demoFair = "demo:fair:payouts"
	// demoFenced is a Redisson fenced lock whose token grows by one per
	// acquisition.
	demoFenced = "demo:fenced:ledger"
)

// demoLocks are the contended locks; the braces in one name show the
// console copes with hash tags.
var demoLocks = []string{"demo:lock:orders", "demo:lock:billing", "demo:lock:{inventory}"}

// trafficConfig tunes the demo traffic. The zero value is the demo.
type trafficConfig struct {
	Prefix string
	Log    *slog.Logger

	// StuckLease is the lease of the abandoned lock; StuckEvery how often
	// a new holder takes and abandons it.
	StuckLease time.Duration
	StuckEvery time.Duration
	// DeadlockEvery is how long after one demo deadlock was broken the
	// next one starts (demodeadlock.go).
	DeadlockEvery time.Duration
}

func (c *trafficConfig) stuckLease() time.Duration {
	if c == nil || c.StuckLease <= 0 {
		return 8 * time.Second
	}
	return c.StuckLease
}

func (c *trafficConfig) stuckEvery() time.Duration {
	if c == nil || c.StuckEvery <= 0 {
		return 20 * time.Second
	}
	return c.StuckEvery
}

func (c *trafficConfig) logger() *slog.Logger {
	if c == nil || c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

// trafficCounts is what the traffic saw from its own side, so a test can
// compare it with what Redis recorded.
type trafficCounts struct {
	apiAcquired, apiRejected, apiErrors atomic.Int64
	loginAcquired, loginRejected        atomic.Int64
	lockTaken, lockReentered            atomic.Int64
	stuckTaken                          atomic.Int64
	partnerAcquired                     atomic.Int64
	tokenTaken                          atomic.Int64
	hitsAllowed, hitsRejected           atomic.Int64
	rwReads, rwWrites                   atomic.Int64
	fairTaken, fencedTaken              atomic.Int64
	// deadlocksBroken counts the deadlocked services' waits that ended
	// with the lock: two per deadlock broken.
	deadlocksBroken atomic.Int64
	// lastFence is the highest fencing token a demo holder saw; a holder
	// seeing one not above it counts a fenceViolation (never, if the
	// tokens work).
	lastFence, fenceViolations atomic.Int64
}

// runTraffic sets up the demo objects and drives them until ctx ends. It
// returns early only when the set-up fails; otherwise it returns nil after
// every worker has stopped.
func runTraffic(ctx context.Context, rdb redis.UniversalClient, cfg trafficConfig) error {
	return runTrafficCounted(ctx, rdb, cfg, &trafficCounts{})
}

func runTrafficCounted(ctx context.Context, rdb redis.UniversalClient, cfg trafficConfig, n *trafficCounts) error {
	t := &traffic{cfg: cfg, log: cfg.logger(), n: n}
	// Two application instances, as if two pods of one service shared
	// these locks: holders then differ in their client UUID too.
	t.apps = demoApps(rdb)
	defer func() {
		for _, app := range t.apps {
			_ = app.Close()
		}
	}()

	// A burst of 500 permits, one more every 2 ms (500/s).
	if err := initBucket(ctx, t.apps[0], cfg.Prefix+demoAPI, 500, 500, 2); err != nil {
		return fmt.Errorf("init %s: %w", cfg.Prefix+demoAPI, err)
	}
	// A small bucket (20 permits, one per 100 ms) that bursts overrun.
	if err := initBucket(ctx, t.apps[0], cfg.Prefix+demoLogin, 20, 20, 100); err != nil {
		return fmt.Errorf("init %s: %w", cfg.Prefix+demoLogin, err)
	}

	// Flooded far above its 10 permits a second.
	if err := initBucket(ctx, t.apps[1], cfg.Prefix+demoFlood, 10, 10, 100); err != nil {
		return fmt.Errorf("init %s: %w", cfg.Prefix+demoFlood, err)
	}
	removeStuck, err := t.leaveStuckLocks(ctx)
	if err != nil {
		return fmt.Errorf("stuck locks: %w", err)
	}
	defer removeStuck()

	// A Redisson limiter as a Java service's trySetRate leaves it.
	if _, err := t.apps[1].NewRedissonLimiter(cfg.Prefix+demoPartner, nil).TrySetRate(ctx, store.RateOverall, 20, time.Second); err != nil {
		return fmt.Errorf("init %s: %w", cfg.Prefix+demoPartner, err)
	}

	var wg sync.WaitGroup
	spawn := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	// Its load: 20 workers, each acquiring one permit every 30 ms
	// (up to 667/s against 500/s: once the initial 500 permits are spent,
	// part of every window is rejected).
	for i := range 20 {
		app := t.apps[i%len(t.apps)]
		spawn(func() { t.apiWorker(ctx, app) })
	}
	for i := range 3 {
		app := t.apps[i%len(t.apps)]
		spawn(func() { t.loginWorker(ctx, app) })
	}
	thread := 40 // owners read like Redisson's thread ids, one per worker
	for _, name := range demoLocks {
		for i := range 3 {
			app := t.apps[i%len(t.apps)]
			thread++
			owner := fmt.Sprintf("thread-%d", thread)
			spawn(func() { t.lockWorker(ctx, app, cfg.Prefix+name, owner) })
		}
	}
	spawn(func() { t.stuckHolder(ctx) })
	spawn(func() { t.tokenLockWorker(ctx) })
	for i := range 3 {
		app := t.apps[i%len(t.apps)]
		spawn(func() { t.partnerWorker(ctx, app) })
	}
	spawn(func() { t.counterWorker(ctx) })
	spawn(func() { t.floodWorker(ctx) })
	for i := range 3 {
		app := t.apps[i%len(t.apps)]
		spawn(func() { t.rwWorker(ctx, app, fmt.Sprintf("reader-%d", i+1), false) })
	}
	spawn(func() { t.rwWorker(ctx, t.apps[1], "writer-1", true) })
	for i := range 4 {
		app := t.apps[i%len(t.apps)]
		spawn(func() { t.fairWorker(ctx, app, fmt.Sprintf("payout-%d", i+1)) })
	}
	for i := range 2 {
		app := t.apps[i%len(t.apps)]
		spawn(func() { t.fencedWorker(ctx, app, fmt.Sprintf("ledger-%d", i+1)) })
	}
	for i := range 4 {
		app := t.apps[i%len(t.apps)]
		spawn(func() { t.queueWorker(ctx, app, fmt.Sprintf("batch-%d", i+1)) })
	}
	spawn(func() { t.deadlocker(ctx, rdb) })

	t.log.Info("demo traffic running", "limiters", []string{cfg.Prefix + demoAPI, cfg.Prefix + demoLogin, cfg.Prefix + demoPartner, cfg.Prefix + demoFlood},
		"locks", append(prefixed(cfg.Prefix, demoLocks), cfg.Prefix+demoStuck, cfg.Prefix+demoTokenLock,
			cfg.Prefix+demoRW, cfg.Prefix+demoFair, cfg.Prefix+demoFenced, cfg.Prefix+demoSetnxStuck, cfg.Prefix+demoDeadline,
			cfg.Prefix+demoQueue, cfg.Prefix+demoStock, cfg.Prefix+demoCart),
		"counters", []string{cfg.Prefix + demoHits})
	wg.Wait()
	return nil
}

type traffic struct {
	cfg  trafficConfig
	log  *slog.Logger
	n    *trafficCounts
	apps []*store.Client
}

func (t *traffic) apiWorker(ctx context.Context, app *store.Client) {
	name := t.cfg.Prefix + demoAPI
	for sleep(ctx, 30*time.Millisecond) {
		ok, err := acquireBucket(ctx, app, name, 1)
		switch {
		case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			// The traffic is ending. A call cut by ctx's deadline can fail
			// (its socket deadline is ctx's) a moment before ctx.Err() says
			// so; it is the end, not an error.
			return
		case err != nil:
			t.n.apiErrors.Add(1)
		case ok:
			t.n.apiAcquired.Add(1)
		default:
			t.n.apiRejected.Add(1)
		}
	}
}

// loginWorker idles, then fires a burst of attempts far above the bucket's
// refill, like a credential-stuffing wave: the tile flips between calm and
// mostly rejected.
func (t *traffic) loginWorker(ctx context.Context, app *store.Client) {
	name := t.cfg.Prefix + demoLogin
	for sleep(ctx, between(500*time.Millisecond, 3*time.Second)) {
		burst := 10 + rand.IntN(30)
		for i := 0; i < burst && sleep(ctx, 10*time.Millisecond); i++ {
			ok, err := acquireBucket(ctx, app, name, 1)
			if err == nil && ok {
				t.n.loginAcquired.Add(1)
			} else if err == nil {
				t.n.loginRejected.Add(1)
			}
		}
	}
}

// lockWorker takes name, holds it for a random while (sometimes taking it
// again re-entrantly in the middle) and releases it, forever.
func (t *traffic) lockWorker(ctx context.Context, app *store.Client, name, owner string) {
	l := newDemoLock(app, name, owner, 0)
	for sleep(ctx, between(50*time.Millisecond, 400*time.Millisecond)) {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := l.Lock(wctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, store.ErrNotObtained) && !errors.Is(err, context.DeadlineExceeded) {
				t.log.Debug("demo lock", "name", name, "err", err)
			}
			continue
		}
		t.n.lockTaken.Add(1)
		hold := between(50*time.Millisecond, 800*time.Millisecond)
		if rand.IntN(3) == 0 && sleep(ctx, hold/2) {
			if err := l.TryLock(ctx); err == nil {
				t.n.lockReentered.Add(1)
				sleep(ctx, hold/2)
				t.unlock(ctx, l, name)
			}
		} else {
			sleep(ctx, hold)
		}
		t.unlock(ctx, l, name)
	}
}

// unlock releases one level even when ctx has just ended, so stopping the
// demo leaves no lock behind for the next run to wait on.
func (t *traffic) unlock(ctx context.Context, l *store.Lock, name string) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := l.Unlock(uctx); err != nil {
		t.log.Debug("demo unlock", "name", name, "err", err)
	}
}

// stuckHolder plays a client that crashed while holding a lock: it takes
// demo:lock:stuck with a short lease, never renews or releases it, and lets
// the console watch the lease run out. A new "crash" follows every
// StuckEvery.
func (t *traffic) stuckHolder(ctx context.Context) {
	name := t.cfg.Prefix + demoStuck
	for i := 1; ; i++ {
		l := newDemoLock(t.apps[0], name, fmt.Sprintf("crashed-%d", i), t.cfg.stuckLease())
		if err := l.TryLock(ctx); err == nil {
			t.n.stuckTaken.Add(1)
		} else if ctx.Err() == nil {
			t.log.Debug("demo stuck lock", "name", name, "err", err)
		}
		// The handle is dropped here, lease still running.
		if !sleep(ctx, t.cfg.stuckEvery()) {
			return
		}
	}
}

// tokenLockWorker plays a report job guarded by a token lock: it takes
// the lock with a fresh random token, works a while and releases it by
// compare-and-delete, then idles; now and then it finds it still taken.
func (t *traffic) tokenLockWorker(ctx context.Context) {
	name := t.cfg.Prefix + demoTokenLock
	for sleep(ctx, between(300*time.Millisecond, 1500*time.Millisecond)) {
		l := t.apps[1].NewTokenLock(name, &store.LockOptions{Lease: 5 * time.Second})
		if err := l.TryLock(ctx); err != nil {
			if ctx.Err() == nil && !errors.Is(err, store.ErrNotObtained) {
				t.log.Debug("demo token lock", "name", name, "err", err)
			}
			continue
		}
		t.n.tokenTaken.Add(1)
		sleep(ctx, between(500*time.Millisecond, 2500*time.Millisecond))
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		if err := l.Unlock(rctx); err != nil {
			t.log.Debug("demo token unlock", "name", name, "err", err)
		}
		cancel()
	}
}

// partnerWorker calls a partner API through the Redisson limiter every
// 100 ms; three of them ask for half again the rate.
func (t *traffic) partnerWorker(ctx context.Context, app *store.Client) {
	l := app.NewRedissonLimiter(t.cfg.Prefix+demoPartner, nil)
	for sleep(ctx, 100*time.Millisecond) {
		r, err := l.TryAcquire(ctx, 1)
		if err == nil && r.Allowed {
			t.n.partnerAcquired.Add(1)
		} else if err != nil && ctx.Err() == nil {
			t.log.Debug("demo partner limiter", "err", err)
		}
	}
}

// counterWorker is one client hitting an IP-limited endpoint a little
// faster than its limit allows.
func (t *traffic) counterWorker(ctx context.Context) {
	c := t.apps[0].NewCounter(t.cfg.Prefix+demoHits, &store.LimiterOptions{Limit: demoHitLimit, Window: demoHitWindow})
	for sleep(ctx, demoHitEvery) {
		h, err := c.TryAcquire(ctx, 1)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				t.log.Debug("demo counter", "err", err)
			}
		case h.Allowed:
			t.n.hitsAllowed.Add(1)
		default:
			t.n.hitsRejected.Add(1)
		}
	}
}

// rwWorker reads the catalog for a while and pauses, over and over; the
// writer updates it now and then. Reads overlap (the console lists several
// read holders), the writer waits for a moment with no reader.
func (t *traffic) rwWorker(ctx context.Context, app *store.Client, owner string, write bool) {
	rw := app.NewRWLock(t.cfg.Prefix+demoRW, &store.LockOptions{Owner: owner})
	side, pauseLo, pauseHi, holdHi := rw.Reader(), 150*time.Millisecond, 600*time.Millisecond, 400*time.Millisecond
	if write {
		side, pauseLo, pauseHi, holdHi = rw.Writer(), 500*time.Millisecond, 1500*time.Millisecond, 300*time.Millisecond
	}
	for sleep(ctx, between(pauseLo, pauseHi)) {
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := side.Lock(wctx)
		cancel()
		if err != nil {
			t.lockFailed(ctx, demoRW, err)
			continue
		}
		if write {
			t.n.rwWrites.Add(1)
		} else {
			t.n.rwReads.Add(1)
		}
		sleep(ctx, between(100*time.Millisecond, holdHi))
		t.release(ctx, demoRW, side.Unlock)
	}
}

// fairWorker queues for the payout lock, holds it a while and queues
// again: with four of them most of the time one holds and the others wait
// in line.
func (t *traffic) fairWorker(ctx context.Context, app *store.Client, owner string) {
	l := app.NewFairLock(t.cfg.Prefix+demoFair, &store.LockOptions{Owner: owner})
	for sleep(ctx, between(50*time.Millisecond, 200*time.Millisecond)) {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := l.Lock(wctx)
		cancel()
		if err != nil {
			t.lockFailed(ctx, demoFair, err)
			continue
		}
		t.n.fairTaken.Add(1)
		sleep(ctx, between(150*time.Millisecond, 500*time.Millisecond))
		t.release(ctx, demoFair, l.Unlock)
	}
}

// fencedWorker writes to the "ledger" under the fenced lock and checks
// what the guarded store would: every holder's token is above the last
// one seen.
func (t *traffic) fencedWorker(ctx context.Context, app *store.Client, owner string) {
	l := app.NewFencedLock(t.cfg.Prefix+demoFenced, &store.LockOptions{Owner: owner})
	for sleep(ctx, between(200*time.Millisecond, 800*time.Millisecond)) {
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		err := l.Lock(wctx)
		cancel()
		if err != nil {
			t.lockFailed(ctx, demoFenced, err)
			continue
		}
		t.n.fencedTaken.Add(1)
		if tok := l.Token(); tok > t.n.lastFence.Load() {
			t.n.lastFence.Store(tok)
		} else {
			t.n.fenceViolations.Add(1)
		}
		sleep(ctx, between(100*time.Millisecond, 400*time.Millisecond))
		t.release(ctx, demoFenced, l.Unlock)
	}
}

// lockFailed logs a wait that ended for another reason than the demo
// stopping or the lock staying busy.
func (t *traffic) lockFailed(ctx context.Context, name string, err error) {
	if ctx.Err() == nil && !errors.Is(err, store.ErrNotObtained) {
		t.log.Debug("demo lock", "name", t.cfg.Prefix+name, "err", err)
	}
}

// release runs unlock even when ctx has just ended, so stopping the demo
// leaves no lock behind.
func (t *traffic) release(ctx context.Context, name string, unlock func(context.Context) error) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := unlock(uctx); err != nil {
		t.log.Debug("demo unlock", "name", t.cfg.Prefix+name, "err", err)
	}
}

// sleep waits d or until ctx ends; it reports whether the caller should go on.
func sleep(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// between returns a uniformly random duration in [lo, hi).
func between(lo, hi time.Duration) time.Duration {
	return lo + rand.N(hi-lo)
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// The functions below adapt the demo to store's client API.

// initBucket creates a token bucket unless one exists (TrySetRate leaves a live one alone).
func initBucket(ctx context.Context, app *store.Client, name string, initial, capacity int64, intervalMS float64) error {
	return app.NewTokenBucket(name, nil).TrySetRate(ctx, store.TokenBucketConfig{
		Capacity: capacity, IntervalMS: intervalMS, Initial: initial,
	})
}

// acquireBucket takes n permits once; ok false means rejected.
func acquireBucket(ctx context.Context, app *store.Client, name string, n int64) (ok bool, err error) {
	res, err := app.NewTokenBucket(name, nil).TryAcquire(ctx, n)
	return res.Allowed, err
}

// newDemoLock returns a handle held as owner. lease 0 means the store's
// default lease kept alive by its watchdog; any other lease is fixed and
// never renewed, so the lock expires unless released first.
func newDemoLock(app *store.Client, name, owner string, lease time.Duration) *store.Lock {
	return app.NewLock(name, &store.LockOptions{Owner: owner, Lease: lease, NoWatchdog: lease > 0})
}
