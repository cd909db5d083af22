package faulttest

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redisproc"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

const (
	workers     = 16
	increments  = 100
	readTimeout = 200 * time.Millisecond
	// replyDelay trips readTimeout: go-redis then retries the command on
	// another connection while Redis has already run it.
	replyDelay = 500 * time.Millisecond
	// downtime of a restart outlasts every lease, as a restart without
	// persistence must (Redis's own advice for locks): a grant that spans
	// it counts as "lease ran out", never as a pass.
	downtime = spinLease + 300*time.Millisecond
	// A fault row runs faultRun at the least and goes on (up to
	// faultBudget) until the fault has happened and the row has made its
	// progress floor since: lockProgress increments, or a limiter's floor
	// of admissions. The fault-free lock row must finish all 1,600
	// increments: it is bounded by that count, and baselineBudget is only
	// a cap against a hang, generous enough for a loaded machine (it
	// finishes in seconds on an idle one), so the anchor is about
	// correctness, not speed. A few increments are the progress floor: a
	// lock failing every call makes none, and on a loaded machine (-race,
	// other test binaries) a faulted row may make only a handful in the
	// budget. restartAfter is how many increments the restart row makes
	// before Redis restarts under a holder, so that the restart finds a
	// lock with a holder and waiters.
	faultRun       = 10 * time.Second
	faultBudget    = 45 * time.Second
	baselineBudget = 120 * time.Second
	lockProgress   = 3
	restartAfter   = 4
	// pauseFor is how long the pause-write fault pauses writes.
	pauseFor = 2 * time.Second
)

// fault is one row of the matrix's fault axis.
type fault struct {
	name  string
	proxy Fault
	// background runs beside the workers until ctx ends.
	background func(ctx context.Context, e *env)
	// restart: Redis restarts without persistence while a lock is held
	// (from inside a critical section), or mid-run for limiters.
	restart bool
	// applied says the fault has happened in e (each case has its own
	// env, so e's counters are the case's): the progress a row must show
	// is counted from then, and a case whose fault never happened fails.
	applied func(e *env) bool
}

var faults = []fault{
	{name: "none", applied: func(*env) bool { return true }},
	{name: "delay-once", background: func(ctx context.Context, e *env) {
		// "Once" per quarter second: one reply at a time is late.
		every(ctx, 250*time.Millisecond, func() { e.proxy.SetFault(Fault{DelayOnce: true, Delay: replyDelay}) })
	}, applied: func(e *env) bool { return e.proxy.Delayed.Load() > 0 }},
	{name: "delay-5%", proxy: Fault{DelayProb: 0.05, Delay: replyDelay},
		applied: func(e *env) bool { return e.proxy.Delayed.Load() > 0 }},
	{name: "reset", proxy: Fault{ResetProb: 0.01},
		applied: func(e *env) bool { return e.proxy.Reset.Load() > 0 }},
	{name: "restart", restart: true,
		applied: func(e *env) bool { return e.restarts.Load() > 0 }},
	{name: "script-flush", background: func(ctx context.Context, e *env) {
		every(ctx, 150*time.Millisecond, func() {
			if e.admin.ScriptFlush(ctx).Err() == nil {
				e.flushes.Add(1)
			}
		})
	}, applied: func(e *env) bool { return e.flushes.Load() > 0 }},
	{name: "pause-write", background: func(ctx context.Context, e *env) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		if e.admin.Do(ctx, "CLIENT", "PAUSE", pauseFor.Milliseconds(), "WRITE").Err() != nil {
			return
		}
		// Redis ends the pause by itself; progress counts from then.
		select {
		case <-ctx.Done():
		case <-time.After(pauseFor):
			e.pauses.Add(1)
		}
	}, applied: func(e *env) bool { return e.pauses.Load() > 0 }},
}

// isNone is the fault-free row: the anchor that must complete.
func (f fault) isNone() bool { return f.name == "none" }

func every(ctx context.Context, d time.Duration, f func()) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		f()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// env is one private redis-server behind one proxy.
type env struct {
	srv   *redisproc.Server
	proxy *Proxy
	admin *redis.Client // straight to Redis, never faulted
	seed  int64

	// What the faults did, for their applied: script flushes sent, write
	// pauses over, restarts done.
	flushes, pauses, restarts atomic.Int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	seed := time.Now().UnixNano()
	if s := os.Getenv("FAULTTEST_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("FAULTTEST_SEED: %v", err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("fault RNG seed %d (rerun with FAULTTEST_SEED=%d)", seed, seed)
		}
	})
	srv := redistest.StartT(t)
	p, err := NewProxy(srv.Addr, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &env{srv: srv, proxy: p, admin: redistest.NewClient(t, srv), seed: seed}
}

// clients are the callers under test: go-redis DEFAULT retries (MaxRetries
// 3) through the proxy, with a ReadTimeout a delayed reply trips. Without
// a fault (direct) they connect straight to Redis: the proxy would only
// copy bytes, and on a busy 2-core machine with -race its copying is a
// good part of what the fault-free run costs.
func (e *env) clients(n int, direct bool) ([]*store.Client, func()) {
	addr := e.proxy.Addr()
	if direct {
		addr = e.srv.Addr
	}
	rdbs := make([]*redis.Client, n)
	cs := make([]*store.Client, n)
	for i := range cs {
		rdbs[i] = redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: readTimeout, DialTimeout: time.Second})
		cs[i] = store.New(rdbs[i], nil)
	}
	return cs, func() {
		// Each store client ends its registry beat (a goroutine) first;
		// in parallel, since each may wait up to a second for Redis.
		var wg sync.WaitGroup
		for _, c := range cs {
			wg.Add(1)
			go func() { defer wg.Done(); _ = c.Close() }()
		}
		wg.Wait()
		for _, r := range rdbs {
			r.Close()
		}
	}
}

// restart kills Redis (every key lost), tells chk when, and starts it
// again on the same port after downtime.
func (e *env) restart(chk *checker) error {
	e.srv.Pause()
	if chk != nil {
		chk.killed(time.Now())
	}
	time.Sleep(downtime)
	if err := e.srv.Resume(); err != nil {
		return err
	}
	e.restarts.Add(1)
	return nil
}

// subscriptions counts this server's subscribers: PUBSUB NUMSUB of every
// channel plus PUBSUB NUMPAT.
func (e *env) subscriptions(ctx context.Context) int64 {
	chans, _ := e.admin.PubSubChannels(ctx, "*").Result()
	var n int64
	if len(chans) > 0 {
		m, _ := e.admin.PubSubNumSub(ctx, chans...).Result()
		for _, v := range m {
			n += v
		}
	}
	pat, _ := e.admin.PubSubNumPat(ctx).Result()
	return n + pat
}

// settle polls (bounded: 13 s, store's wait hub idles 10 s before it
// closes its subscription) until ok, and says whether it got there.
func settle(ok func() bool) bool {
	for range 260 {
		if ok() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// runMatrix runs one parallel subtest per kind × fault, each on an env of
// its own (so its counters and subscriptions are the case's alone), logs
// the matrix of rows, and checks the goroutines once every case is done.
func runMatrix[K any](t *testing.T, kinds []K, kindName func(K) string, run func(*testing.T, *env, K, fault) (failures, string)) {
	m := &matrix{}
	t.Cleanup(func() { t.Log(m) })
	goroutines := runtime.NumGoroutine()
	t.Run("kinds", func(t *testing.T) {
		for _, kind := range kinds {
			t.Run(kindName(kind), func(t *testing.T) {
				t.Parallel()
				for _, f := range faults {
					t.Run(f.name, func(t *testing.T) {
						t.Parallel()
						e := newEnv(t)
						subs := e.subscriptions(t.Context())
						fl, detail := run(t, e, kind, f)
						checkSubscriptions(t, e, subs, &fl)
						m.add(kindName(kind), f.name, fl.list, detail)
						fl.finish(t)
					})
				}
			})
		}
	})
	t.Run("goroutines", func(t *testing.T) { checkGoroutines(t, goroutines) })
}

// checkSubscriptions runs after a case, its clients closed: this server's
// subscriptions must fall back to base.
func checkSubscriptions(t *testing.T, e *env, base int64, fl *failures) {
	var now int64
	if !settle(func() bool { now = e.subscriptions(t.Context()); return now <= base }) {
		fl.add("leak: subscriptions %d -> %d", base, now)
	}
}

// checkGoroutines runs after every kind and fault of a test (they run in
// parallel, so only then is the process's goroutine count comparable).
func checkGoroutines(t *testing.T, base int) {
	base++ // this check's own subtest goroutine
	var now int
	if settle(func() bool { now = runtime.NumGoroutine(); return now <= base }) {
		t.Logf("goroutines back to %d", base)
		return
	}
	var stacks strings.Builder
	pprof.Lookup("goroutine").WriteTo(&stacks, 1)
	var fl failures
	fl.add("leak: goroutines %d -> %d\n%s", base, now, stacks.String())
	fl.finish(t)
}

// storeClient is an unfaulted store client for setup (over e.admin).
func storeClient(e *env) *store.Client {
	// Out of the registry: nobody closes it, and its beat would outlive
	// the test (the goroutine check).
	return store.New(e.admin, &store.Options{NoRegistry: true})
}
