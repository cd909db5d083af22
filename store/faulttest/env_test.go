package faulttest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
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
	readTimeout = 100 * time.Millisecond
	// replyDelay trips readTimeout: go-redis then retries the command on
	// another connection while Redis has already run it.
	replyDelay = 250 * time.Millisecond
	// downtime of a restart outlasts every lease, as a restart without
	// persistence must (Redis's own advice for locks): a grant that spans
	// it counts as "lease ran out", never as a pass.
	downtime = spinLease + 300*time.Millisecond
	// caseBudget bounds one kind × fault run.
	caseBudget = 15 * time.Second
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
}

var faults = []fault{
	{name: "none"},
	{name: "delay-once", background: func(ctx context.Context, e *env) {
		// "Once" per quarter second: one reply at a time is late.
		every(ctx, 250*time.Millisecond, func() { e.proxy.SetFault(Fault{DelayOnce: true, Delay: replyDelay}) })
	}},
	{name: "delay-5%", proxy: Fault{DelayProb: 0.05, Delay: replyDelay}},
	{name: "reset", proxy: Fault{ResetProb: 0.01}},
	{name: "restart", restart: true},
	{name: "script-flush", background: func(ctx context.Context, e *env) {
		every(ctx, 150*time.Millisecond, func() { e.admin.ScriptFlush(ctx) })
	}},
	{name: "pause-write", background: func(ctx context.Context, e *env) {
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
			e.admin.Do(ctx, "CLIENT", "PAUSE", "2000", "WRITE")
		}
	}},
}

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
// 3) through the proxy, with a ReadTimeout a delayed reply trips.
func (e *env) clients(n int) ([]*store.Client, func()) {
	rdbs := make([]*redis.Client, n)
	cs := make([]*store.Client, n)
	for i := range cs {
		rdbs[i] = redis.NewClient(&redis.Options{Addr: e.proxy.Addr(), ReadTimeout: readTimeout, DialTimeout: time.Second})
		cs[i] = store.New(rdbs[i], nil)
	}
	return cs, func() {
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
	return e.srv.Resume()
}

// baseline is what must come back after a run: goroutines and Redis
// subscriptions.
type baseline struct {
	goroutines int
	subs       int64
}

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

func (e *env) baseline(ctx context.Context) baseline {
	return baseline{goroutines: runtime.NumGoroutine(), subs: e.subscriptions(ctx)}
}

// leaks waits (bounded) for goroutines and subscriptions to fall back to
// b and describes what did not.
func (e *env) leaks(ctx context.Context, b baseline) string {
	var g int
	var s int64
	for range 260 { // 13 s: store's wait hub idles 10 s before closing
		g, s = runtime.NumGoroutine(), e.subscriptions(ctx)
		if g <= b.goroutines && s <= b.subs {
			return ""
		}
		time.Sleep(50 * time.Millisecond)
	}
	var stacks strings.Builder
	pprof.Lookup("goroutine").WriteTo(&stacks, 1)
	return fmt.Sprintf("goroutines %d -> %d, subscriptions %d -> %d\n%s", b.goroutines, g, b.subs, s, stacks.String())
}

// storeClient is an unfaulted store client for setup (over e.admin).
func storeClient(e *env) *store.Client {
	return store.New(e.admin, nil)
}
