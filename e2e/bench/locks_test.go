package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockwarden/lockwarden/store"
)

// A lock implementation as an application uses it: one instance per process
// (its Redis client), and per goroutine a lock and an unlock for a key.
type lockPeer struct {
	name string
	// instance sets up one application instance. contended says whether
	// callers must wait (Lock) or may fail fast.
	instance func(rdb *countingClient, contended bool) func(key string) (lock, unlock func(context.Context) error)
}

var lockPeers = []lockPeer{
	lockwardenPeer("lockwarden", nil),
	{"bsm/redislock", func(rdb *countingClient, contended bool) func(string) (func(context.Context) error, func(context.Context) error) {
		locker := redislock.New(rdb.Client)
		opts := &redislock.Options{}
		if contended {
			// Tight polling, the way redislock waits.
			opts.RetryStrategy = redislock.LinearBackoff(time.Millisecond)
		}
		return func(key string) (func(context.Context) error, func(context.Context) error) {
			var held *redislock.Lock
			lock := func(ctx context.Context) error {
				l, err := locker.Obtain(ctx, key, 30*time.Second, opts)
				held = l
				return err
			}
			unlock := func(ctx context.Context) error { return held.Release(ctx) }
			return lock, unlock
		}
	}},
	{"redsync", func(rdb *countingClient, _ bool) func(string) (func(context.Context) error, func(context.Context) error) {
		rs := redsync.New(goredis.NewPool(rdb.Client))
		return func(key string) (func(context.Context) error, func(context.Context) error) {
			// Default expiry and retry delays; only the number of tries is
			// raised so a long wait is a wait, not an error.
			m := rs.NewMutex(key, redsync.WithTries(1<<20))
			unlock := func(ctx context.Context) error {
				_, err := m.UnlockContext(ctx)
				return err
			}
			return m.LockContext, unlock
		}
	}},
}

// lockwardenPeer is lockwarden's Lock on a store.Client made with opts
// (nil: the defaults, a 30 s lease with the watchdog, reentrant, every
// attempt counted in the stats ring, and replica acknowledgement from as
// many replicas as the master has).
func lockwardenPeer(name string, opts *store.Options) lockPeer {
	return lockPeer{name, func(rdb *countingClient, _ bool) func(string) (func(context.Context) error, func(context.Context) error) {
		rdb.opts = opts
		c := rdb.store()
		return func(key string) (func(context.Context) error, func(context.Context) error) {
			l := c.NewLock(key, nil)
			return l.Lock, l.Unlock
		}
	}}
}

// uncontended (case 1): lock + unlock pairs per second, each goroutine on
// its own key.
func uncontended(ctx context.Context, e *env, p lockPeer, conc int, d time.Duration) (float64, error) {
	rate, _, err := uncontendedPairs(ctx, e, p, conc, d)
	return rate, err
}

// uncontendedPairs is uncontended that also returns how many pairs it made.
func uncontendedPairs(ctx context.Context, e *env, p lockPeer, conc int, d time.Duration) (float64, int64, error) {
	rdb := e.client(conc)
	defer rdb.Close()
	inst := p.instance(rdb, false)
	prefix := e.prefix("c1")
	type pair struct{ lock, unlock func(context.Context) error }
	pairs := make([]pair, conc)
	for g := range pairs {
		l, u := inst(fmt.Sprintf("%s%d", prefix, g))
		pairs[g] = pair{l, u}
	}
	var n atomic.Int64
	rate, err := runFor(ctx, conc, d, func(ctx context.Context, g int) error {
		if err := pairs[g].lock(ctx); err != nil {
			return err
		}
		if err := pairs[g].unlock(ctx); err != nil {
			return err
		}
		n.Add(1)
		return nil
	})
	return rate, n.Load(), err
}

// contendedResult is one run of case 2.
type contendedResult struct {
	acqPerSec  float64
	waitP50    float64 // ms, Lock call to return
	waitP99    float64
	waitMax    float64
	handoffP50 float64 // ms, previous release to this acquisition
	handoffP99 float64
	sentPerAcq float64 // commands clients sent, per acquisition
	execPerAcq float64 // commands Redis executed (INFO commandstats, scripts' included)
	shareA     float64 // fraction of acquisitions by instance A
	jain       float64 // Jain's fairness index over the two instances
	// passed is the fraction of acquisitions a release passed in process
	// (store's Client.WaitStats; 0 for the peers).
	passed      float64
	acquisition int64
}

// contended (case 2): 2 instances × perInstance goroutines on one lock,
// each holding it for cs; each instance is a process (instances_test.go).
func contended(ctx context.Context, e *env, p lockPeer, perInstance int, cs, d time.Duration) (contendedResult, error) {
	key := e.prefix("c2") + "lock"
	admin := e.client(1)
	defer admin.Close()
	before, err := readRedisUsage(ctx, admin.Client)
	if err != nil {
		return contendedResult{}, err
	}
	res, err := runInstances(ctx, e, p, key, 2, perInstance, cs, d)
	if err != nil {
		return contendedResult{}, err
	}
	after, err := readRedisUsage(ctx, admin.Client)
	if err != nil {
		return contendedResult{}, err
	}
	var waits []time.Duration
	var sent, passes int64
	for _, r := range res {
		for _, ev := range r.Events {
			waits = append(waits, time.Duration(ev.Got-ev.Wait))
		}
		sent += r.Sent
		passes += r.Passes
	}
	a, b := float64(len(res[0].Events)), float64(len(res[1].Events))
	n := a + b
	r := contendedResult{acquisition: int64(n)}
	if n == 0 {
		return r, fmt.Errorf("%s: no acquisition in %v", p.name, d)
	}
	hs := handoffs(res)
	r.acqPerSec = n / d.Seconds()
	r.waitP50, r.waitP99, r.waitMax = percentileMS(waits, 50), percentileMS(waits, 99), percentileMS(waits, 100)
	r.handoffP50, r.handoffP99 = percentileMS(hs, 50), percentileMS(hs, 99)
	r.sentPerAcq = float64(sent) / n
	r.execPerAcq = float64(totalCalls(after, before)) / n
	r.shareA = a / n
	r.jain = n * n / (2 * (a*a + b*b))
	r.passed = float64(passes) / n
	return r, nil
}

// TestBenchQuick runs cases 1-3 only, a few rounds, and logs each figure and
// its ratio to the peers: a quick before/after check while working on the
// hot path, without the whole report. Set LOCKWARDEN_BENCH_QUICK=rounds.
func TestBenchQuick(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("LOCKWARDEN_BENCH_QUICK"))
	if rounds <= 0 {
		t.Skip("set LOCKWARDEN_BENCH_QUICK=rounds to run cases 1-3 alone")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := newEnv(t)
	for _, conc := range []int{1, 16, 64} {
		res := make([]series, len(lockPeers))
		for r := 0; r < rounds; r++ {
			for i, p := range lockPeers {
				v, err := uncontended(ctx, e, p, conc, time.Second)
				if err != nil {
					t.Fatalf("case 1 %s C=%d: %v", p.name, conc, err)
				}
				res[i] = append(res[i], v)
			}
		}
		t.Logf("case 1 C=%d: lockwarden %s, redislock %s, redsync %s, ratio to redislock %s", conc,
			cell(res[0], 0), cell(res[1], 0), cell(res[2], 0), cell(ratios(res[0], res[1]), 2))
	}
	acq := make([]series, len(lockPeers))
	for r := 0; r < rounds; r++ {
		for i, p := range lockPeers {
			v, err := contended(ctx, e, p, 8, 200*time.Microsecond, 2*time.Second)
			if err != nil {
				t.Fatalf("case 2 %s: %v", p.name, err)
			}
			acq[i] = append(acq[i], v.acqPerSec)
			if i == 0 {
				t.Logf("case 2 lockwarden: %+v", v)
			}
		}
	}
	t.Logf("case 2 acquisitions/s: lockwarden %s, redislock %s, redsync %s, ratio to redislock %s, to redsync %s",
		cell(acq[0], 0), cell(acq[1], 0), cell(acq[2], 0), cell(ratios(acq[0], acq[1]), 2), cell(ratios(acq[0], acq[2]), 2))
	for _, keys := range []int{1, 1000} {
		for _, conc := range []int{1, 16, 64} {
			res := decisionRounds(ctx, t, e, keys, conc, rounds)
			t.Logf("case 3 keys=%d C=%d: lockwarden %s, redis_rate %s, ratio %s", keys, conc,
				cell(res[0], 0), cell(res[1], 0), cell(ratios(res[0], res[1]), 2))
		}
	}
}
