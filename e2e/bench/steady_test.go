package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/web"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/redis/go-redis/v9"
)

// Case 8, steady state: an idle console (no viewer) over the case's big
// keyspace, after its first pass. What it costs Redis over a window, and
// how long a new lock takes to be listed by each discovery source.

// steadyResult is one steady-state window.
type steadyResult struct {
	redisCPUPct float64 // Redis CPU over the window, % of one core (only the console runs)
	// pipesPerTick, cmdsPerTick and singles (commands sent outside
	// pipelines) leave out the history's round trips, which are writes on
	// a schedule of their own (rtHook.countHistory): histPipes (a write
	// every 10 s) and histCalls (its writer lock's renewals with the
	// INFO its store.Client sends now and then to learn the replicas and,
	// on a replica that does not write, its read of how far the writer
	// got).
	pipesPerTick float64
	cmdsPerTick  float64
	singles      int64
	histPipes    int64
	histCalls    int64
	scans        int64 // SCAN calls (commandstats)
	passSeconds  float64
	keysPerSec   float64 // keys the walk examined per second
	page         int64   // the walk's SCAN COUNT at the end
	costPerKey   float64 // its measured µs per key
}

// apiStatus is the part of /api/status the bench reads.
type apiStatus struct {
	Passes          int64   `json:"passes"`
	LastPassSeconds float64 `json:"last_pass_seconds"`
	KeyspaceEvents  string  `json:"keyspace_events"`
	Locks           int     `json:"locks"`
	PageCount       int64   `json:"page_count"`
	CostPerKeyUsec  float64 `json:"cost_per_key_usec"`
	KeysScanned     int64   `json:"keys_scanned_total"`
	// BudgetPassSeconds is the pass the budget pays for at the measured cost.
	BudgetPassSeconds float64 `json:"budget_pass_seconds"`
	// SamplingShare is sampling's measured share of a core.
	SamplingShare float64 `json:"sampling_share"`
	// History is null when the console keeps none.
	History *history.Stats `json:"history"`
	Recent  []struct {
		Name   string `json:"name"`
		Source string `json:"source"`
	} `json:"recent"`
}

func getStatus(ctx context.Context, rig *consoleRig) (apiStatus, error) {
	var st apiStatus
	req, _ := http.NewRequestWithContext(ctx, "GET", rig.srv.URL()+"/api/status", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

// settle waits for the console's first pass, for its idle cadence to take
// over (a few ticks of unchanged reads) and, when it walks, for the walk to
// have measured what a key costs (until then its pages are sized at an
// assumed cost, which at 10M keys is not the steady state), bounded.
func settle(ctx context.Context, rig *consoleRig) error {
	if err := listed(ctx, rig); err != nil {
		return err
	}
	sleepCtx(ctx, 3*time.Second)
	// A console that does not walk (full passes only) never measures a
	// cost: it is given 20 s at most.
	for i := 0; i < 200; i++ {
		if st, err := getStatus(ctx, rig); err == nil && st.CostPerKeyUsec > 0 {
			sleepCtx(ctx, 2*time.Second) // a few pages at the measured cost
			break
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			break
		}
	}
	return ctx.Err()
}

// listed waits for the console's first tick's full pass, bounded.
func listed(ctx context.Context, rig *consoleRig) error {
	for i := 0; i < 1200; i++ { // 2 min at most
		if st, err := getStatus(ctx, rig); err == nil && st.Locks > 0 {
			return nil
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("the console listed no lock in 2 minutes")
}

// steadyState waits, after settle, for what an idle console looks like
// once it has run a while: its walk's first pass done (a pass's rejected
// hashes are remembered from then on) and its objects idle long enough to
// be read every 10 s (about a minute). Bounded: 80 s, or the first pass,
// whichever ends last, but never past 80 s (at 10M keys a pass takes
// many minutes).
func steadyState(ctx context.Context, rig *consoleRig) {
	start := time.Now()
	for time.Since(start) < 80*time.Second {
		st, err := getStatus(ctx, rig)
		if err == nil && st.Passes >= 1 && time.Since(start) > 70*time.Second {
			return
		}
		if !sleepCtx(ctx, time.Second) {
			return
		}
	}
}

// steadyWindow measures an idle console over window.
func steadyWindow(ctx context.Context, rdb *redis.Client, rig *consoleRig, window time.Duration) (steadyResult, error) {
	var r steadyResult
	u0, err := readRedisUsage(ctx, rdb)
	if err != nil {
		return r, err
	}
	s0, err := getStatus(ctx, rig)
	if err != nil {
		return r, err
	}
	h0 := rig.hook.snap()
	t0 := time.Now()
	sleepCtx(ctx, window)
	secs := time.Since(t0).Seconds()
	h := rig.hook.snap().minus(h0)
	u1, err := readRedisUsage(ctx, rdb)
	if err != nil {
		return r, err
	}
	// Every readRedisUsage is itself one INFO; negligible next to a window.
	ticks := secs / 0.2
	r.redisCPUPct = 100 * (u1.cpu - u0.cpu) / secs
	r.pipesPerTick = float64(h.pipes-h.histPipes) / ticks
	r.cmdsPerTick = float64(h.cmds-h.histCmds) / ticks
	r.singles = h.calls - h.histCalls
	r.histPipes, r.histCalls = h.histPipes, h.histCalls
	r.scans = u1.callsOf(u0, "scan")
	st, err := getStatus(ctx, rig)
	if err != nil {
		return r, err
	}
	r.passSeconds = st.LastPassSeconds
	r.keysPerSec = float64(st.KeysScanned-s0.KeysScanned) / secs
	r.page, r.costPerKey = st.PageCount, st.CostPerKeyUsec
	return r, nil
}

// visibility writes n new locks, one every gap, with write, and returns
// how long each took to appear in the console's recently-discovered list,
// and which source listed them. It gives up after limit.
func visibility(ctx context.Context, rig *consoleRig, n int, gap, limit time.Duration, write func(name string) error) ([]time.Duration, map[string]int, error) {
	prefix := fmt.Sprintf("vis:%d:", time.Now().UnixNano())
	written := make(map[string]time.Time, n)
	var mu sync.Mutex
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			name := fmt.Sprintf("%slock:%d", prefix, i)
			mu.Lock()
			written[name] = time.Now()
			mu.Unlock()
			if err := write(name); err != nil {
				errc <- err
				return
			}
			sleepCtx(ctx, gap)
		}
		errc <- nil
	}()
	seen := map[string]time.Duration{}
	sources := map[string]int{}
	deadline := time.Now().Add(limit)
	for len(seen) < n && time.Now().Before(deadline) {
		st, err := getStatus(ctx, rig)
		if err != nil {
			return nil, nil, err
		}
		now := time.Now()
		mu.Lock()
		for _, f := range st.Recent {
			if at, ok := written[f.Name]; ok {
				if _, done := seen[f.Name]; !done {
					seen[f.Name] = now.Sub(at)
					sources[f.Source]++
				}
			}
		}
		mu.Unlock()
		if !sleepCtx(ctx, 10*time.Millisecond) {
			return nil, nil, ctx.Err()
		}
	}
	if err := <-errc; err != nil {
		return nil, nil, err
	}
	if len(seen) < n {
		sources[fmt.Sprintf("not listed within %v", limit)] = n - len(seen)
	}
	out := make([]time.Duration, 0, n)
	for _, d := range seen {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, sources, nil
}

// startConsoleWith starts a console over addr configured by cfg (the
// Inspector and the listener are set before cfg runs; cfg may replace the
// Inspector), its client's round trips counted.
func startConsoleWith(ctx context.Context, addr string, cfg func(c *web.Config)) (*consoleRig, error) {
	h := &rtHook{}
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second})
	rdb.AddHook(h)
	c := web.Config{Inspector: inspect.New(rdb, nil), Listen: "127.0.0.1:0", Match: "*"}
	cfg(&c)
	srv := web.New(c)
	if err := srv.Open(ctx); err != nil {
		rdb.Close()
		return nil, err
	}
	return &consoleRig{srv: srv, rdb: rdb, hook: h, ws: "ws" + strings.TrimPrefix(srv.URL(), "http") + "/ws"}, nil
}

// beforePattern is a token-lock pattern no key matches. A configured
// string pattern makes the console run full passes (Discover: SCAN TYPE
// hash, then SCAN MATCH <pattern> TYPE string) instead of the paced walk,
// and with a 100 % budget and a 1 s pass it runs one every second, or
// back to back when a pass takes longer: the console before issue 11's
// work, which ran Discover every second. The string SCAN is the
// emulation's own extra (Redis filters it by MATCH before the type).
// Its full passes remember, as every console's do, the hashes found to be
// no object (store/inspect/walk/rejects.go), so this row measures today's
// full-pass mode at a pass a second.
const beforePattern = "lw-bench-before-none:*"

func beforeConsole(c *web.Config) {
	c.Inspector = inspect.New(c.Inspector.Redis(), &inspect.Options{Patterns: inspect.ObjectPatterns{TokenLocks: []string{beforePattern}}})
	c.DiscoverInterval = time.Second
	c.DiscoveryBudget = 1
}

// case8Size is case 8 at one keyspace size, on a server of its own.
type case8Size struct {
	keys      int
	populated float64 // seconds to fill the server
	idleCPU   float64 // Redis CPU with no console, % of one core (its own timers)
	pass      discoveryResult
	before    *steadyResult // nil: not measured at this size
	steady    steadyResult  // the defaults
	steadyOn  *steadyResult // --keyspace-events=on
	final     apiStatus     // the defaults console at its end

	announced, scan, notified, beforeScan []time.Duration
	srcAnn, srcScan, srcNotified          map[string]int
	srcBefore                             map[string]int

	history *historyCase // nil: not measured at this size
}

// runCase8Size fills a server with k and measures it. full adds what
// takes minutes: the "before" console, the walk-only time-to-visible
// (a whole pass), the console with notifications on and, when hl is not
// nil, the history's rows under traffic (history_test.go).
func runCase8Size(ctx context.Context, t testing.TB, k discoveryKeys, window time.Duration, visN int, full bool, hl *historyLoad) (*case8Size, error) {
	out := &case8Size{keys: k.other + k.locks + k.limiters}
	t0 := time.Now()
	rdb, err := discoveryServer(ctx, t, k)
	if err != nil {
		return out, err
	}
	out.populated = time.Since(t0).Seconds()
	if out.pass, err = discoverOnce(ctx, rdb, k, time.Second); err != nil {
		return out, err
	}
	u0, err := readRedisUsage(ctx, rdb)
	if err != nil {
		return out, err
	}
	t1 := time.Now()
	sleepCtx(ctx, 5*time.Second)
	u1, err := readRedisUsage(ctx, rdb)
	if err != nil {
		return out, err
	}
	out.idleCPU = 100 * (u1.cpu - u0.cpu) / time.Since(t1).Seconds()
	addr := rdb.Options().Addr
	holder := store.New(rdb, &store.Options{NoRegistry: true}).ID() + ":9"
	foreign := func(name string) error {
		p := rdb.Pipeline()
		p.HSet(ctx, name, holder, 1)
		p.PExpire(ctx, name, 10*time.Minute)
		_, err := p.Exec(ctx)
		return err
	}
	if err := rdb.ConfigSet(ctx, "notify-keyspace-events", "").Err(); err != nil {
		return out, err
	}

	if full {
		rig, err := startConsoleWith(ctx, addr, beforeConsole)
		if err != nil {
			return out, err
		}
		var r steadyResult
		err = settle(ctx, rig)
		if err == nil {
			r, err = steadyWindow(ctx, rdb, rig, window)
			out.before = &r
		}
		if err == nil {
			out.beforeScan, out.srcBefore, err = visibility(ctx, rig, visN, 100*time.Millisecond, 30*time.Second, foreign)
		}
		rig.close()
		if err != nil {
			return out, err
		}
	}

	// The defaults: no notifications on this server, so auto means off.
	rig, err := startConsoleWith(ctx, addr, func(*web.Config) {})
	if err != nil {
		return out, err
	}
	defer func() {
		if rig != nil {
			rig.close()
		}
	}()
	if err = settle(ctx, rig); err != nil {
		return out, err
	}
	steadyState(ctx, rig)
	if out.steady, err = steadyWindow(ctx, rdb, rig, window); err != nil {
		return out, err
	}
	// A store client taking locks: announced in the registry by its
	// flusher, listed from there.
	app := store.New(rdb, &store.Options{App: "bench-case-8"})
	defer app.Close()
	var held []*store.Lock
	defer func() {
		for _, l := range held {
			_ = l.Unlock(context.WithoutCancel(ctx))
		}
	}()
	take := func(name string) error {
		l := app.NewLock(name, &store.LockOptions{Lease: 10 * time.Minute})
		held = append(held, l)
		return l.TryLock(ctx)
	}
	if out.announced, out.srcAnn, err = visibility(ctx, rig, visN, 100*time.Millisecond, 30*time.Second, take); err != nil {
		return out, err
	}
	if full {
		if out.scan, out.srcScan, err = visibility(ctx, rig, visN, 250*time.Millisecond, 3*time.Minute, foreign); err != nil {
			return out, err
		}
	}
	if out.final, err = getStatus(ctx, rig); err != nil || !full {
		return out, err
	}
	rig.close()

	// Notifications on (the console sets notify-keyspace-events).
	rig, err = startConsoleWith(ctx, addr, func(c *web.Config) { c.KeyspaceEvents = walk.KeyEventsOn })
	if err != nil {
		return out, err
	}
	if err = settle(ctx, rig); err != nil {
		return out, err
	}
	var on steadyResult
	if on, err = steadyWindow(ctx, rdb, rig, window); err != nil {
		return out, err
	}
	out.steadyOn = &on
	out.notified, out.srcNotified, err = visibility(ctx, rig, visN, 100*time.Millisecond, 30*time.Second, foreign)
	if err != nil || hl == nil {
		return out, err
	}
	rig.close()
	rig = nil
	// The history's consoles run at the defaults: notifications off again.
	if err := rdb.ConfigSet(ctx, "notify-keyspace-events", "").Err(); err != nil {
		return out, err
	}
	out.history, err = historyCost(ctx, rdb, k, *hl)
	return out, err
}

// runCase8 is case 8: 1M keys with everything (the history's rows
// included), then 10M keys (or tenM keys) with the defaults' cost, the
// pass the budget allows and the announced time-to-visible.
func runCase8(ctx context.Context, t testing.TB, oneM, tenM int, window time.Duration, visN int) ([]*case8Size, error) {
	var out []*case8Size
	for i, n := range []int{oneM, tenM} {
		if n <= 0 {
			continue
		}
		k := discoveryKeys{other: n, hashes: 100_000, locks: 10_000, limiters: 1_000}
		var hl *historyLoad
		if i == 0 {
			l := case8HistoryLoad()
			hl = &l
		}
		r, err := runCase8Size(ctx, t, k, window, visN, i == 0, hl)
		out = append(out, r)
		if err != nil {
			return out, fmt.Errorf("%d keys: %w", n, err)
		}
	}
	return out, nil
}

// case8Rows writes case 8's tables.
func case8Rows(w func(string, ...any), rs []*case8Size) {
	w("| keys | filled in (s) | Redis CPU with no console, %% of one core | one full pass, `Discover` (s) | its Redis CPU, %% of one core | PING p99 during (ms) | idle (ms) |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		w("| %d | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f |\n", r.keys, r.populated, r.idleCPU, r.pass.seconds, r.pass.redisCPUPct, r.pass.p99, r.pass.idleP99)
	}
	w("\n| keys | console | Redis CPU, %% of one core | pipelines per tick | commands per tick | single calls | the history's own: pipelines, single calls | SCAN calls | keys examined/s | SCAN COUNT | µs of Redis CPU per key | the walk's share (keys/s × µs), %% | sampling's share as the console measured it, %% | pass the budget allows (s) | last pass (s) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	row := func(keys int, label string, v steadyResult, final *apiStatus) {
		bp, ss := "–", "–"
		if final != nil { // the pass as the console's status had it at its end
			v.passSeconds = final.LastPassSeconds
			if final.BudgetPassSeconds > 0 {
				bp = fmt.Sprintf("%.0f", final.BudgetPassSeconds)
			}
			ss = fmt.Sprintf("%.2f", 100*final.SamplingShare)
		}
		w("| %d | %s | %.2f | %.2f | %.0f | %d | %d, %d | %d | %.0f | %d | %.3f | %.2f | %s | %s | %.1f |\n", keys, label, v.redisCPUPct, v.pipesPerTick, v.cmdsPerTick, v.singles, v.histPipes, v.histCalls, v.scans,
			v.keysPerSec, v.page, v.costPerKey, v.keysPerSec*v.costPerKey/1e4, ss, bp, v.passSeconds)
	}
	for _, r := range rs {
		if r.before != nil {
			row(r.keys, "before: a full pass every second (emulated, see below)", *r.before, nil)
		}
		row(r.keys, "defaults (no notifications on the server)", r.steady, &r.final)
		if r.steadyOn != nil {
			row(r.keys, "--keyspace-events=on", *r.steadyOn, nil)
		}
	}
	w("\n| keys | a new lock, listed by | p50 (ms) | p99 (ms) | max (ms) | found by |\n|---|---|---|---|---|---|\n")
	for _, r := range rs {
		for _, v := range []struct {
			label string
			d     []time.Duration
			src   map[string]int
		}{{"store (`Lock.TryLock`, announced in the registry)", r.announced, r.srcAnn},
			{"a foreign writer, keyspace notifications on", r.notified, r.srcNotified},
			{"a foreign writer, no notifications (paced walk only)", r.scan, r.srcScan},
			{"before: a foreign writer, full passes every second", r.beforeScan, r.srcBefore}} {
			if len(v.d) == 0 && len(v.src) == 0 {
				continue
			}
			w("| %d | %s | %.0f | %.0f | %.0f | %s |\n", r.keys, v.label, percentileMS(v.d, 50), percentileMS(v.d, 99), percentileMS(v.d, 100), sourceCounts(v.src))
		}
	}
	historyRows(w, rs)
}

func sourceCounts(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// TestBenchCase8 runs case 8 on its own, for measuring discovery without
// the whole report:
//
//	LOCKWARDEN_BENCH_CASE=8 go test -run '^TestBenchCase8$' -count=1 -v -timeout 15m ./e2e/bench/
//
// LOCKWARDEN_BENCH_KEYS and LOCKWARDEN_BENCH_KEYS_BIG set the two keyspace
// sizes (default 1,000,000 and 10,000,000).
func TestBenchCase8(t *testing.T) {
	if os.Getenv("LOCKWARDEN_BENCH_CASE") != "8" {
		t.Skip("set LOCKWARDEN_BENCH_CASE=8 to run case 8 on its own")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 14*time.Minute)
	defer cancel()
	t0 := time.Now()
	rs, err := runCase8(ctx, t, envInt("LOCKWARDEN_BENCH_KEYS", 1_000_000), envInt("LOCKWARDEN_BENCH_KEYS_BIG", 10_000_000), 15*time.Second, 20)
	var out strings.Builder
	case8Rows(func(format string, args ...any) { fmt.Fprintf(&out, format, args...) }, rs)
	if len(rs) > 0 {
		historyTargets(func(what string, ok bool, got string) { fmt.Fprintf(&out, "\ntarget %s: %v (%s)", what, ok, got) }, rs[0])
	}
	t.Logf("case 8 took %.0f s\n%s", time.Since(t0).Seconds(), out.String())
	if err != nil {
		t.Fatal(err)
	}
}
