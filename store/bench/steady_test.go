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
	"github.com/redis/go-redis/v9"
)

// Case 8, steady state: an idle console (no viewer) over the case's big
// keyspace, after its first pass. What it costs Redis over a window, and
// how long a new lock takes to be listed by each discovery source.

// steadyResult is one steady-state window.
type steadyResult struct {
	redisCPUPct  float64 // Redis CPU over the window, % of one core (only the console runs)
	pipesPerTick float64
	cmdsPerTick  float64
	singles      int64 // commands sent outside pipelines
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
	Recent          []struct {
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

// settle waits for the console's first pass and for its idle cadence to
// take over (a few ticks of unchanged reads), bounded.
func settle(ctx context.Context, rig *consoleRig) error {
	for i := 0; i < 1200; i++ { // 2 min at most
		st, err := getStatus(ctx, rig)
		if err == nil && st.Locks > 0 { // the first tick's full pass is in
			sleepCtx(ctx, 3*time.Second)
			return ctx.Err()
		}
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("the console listed no lock in 2 minutes")
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
	r.pipesPerTick = float64(h.pipes) / ticks
	r.cmdsPerTick = float64(h.cmds) / ticks
	r.singles = h.calls
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

// steadyCase is case 8's steady-state part: the console with the
// defaults, then time-to-visible per source (announced with the defaults,
// SCAN with notifications off, notifications on).
type steadyCase struct {
	steady, steadyOn steadyResult
	announced, scan  []time.Duration
	notified         []time.Duration
	srcAnn, srcScan  map[string]int
	srcNotified      map[string]int
	keyEventsOn      string
}

func runSteadyCase(ctx context.Context, rdb *redis.Client, window time.Duration, visN int) (*steadyCase, error) {
	out := &steadyCase{}
	addr := rdb.Options().Addr
	holder := store.New(rdb, &store.Options{NoRegistry: true}).ID() + ":9"
	foreign := func(name string) error {
		p := rdb.Pipeline()
		p.HSet(ctx, name, holder, 1)
		p.PExpire(ctx, name, 10*time.Minute)
		_, err := p.Exec(ctx)
		return err
	}
	announced := func(name string) error {
		if err := foreign(name); err != nil {
			return err
		}
		// What a store client's flusher does (registry-format.md): ZADD
		// with Redis TIME, here as a script so the score is the server's.
		return rdb.Eval(ctx, "local t = redis.call('TIME'); return redis.call('ZADD', KEYS[1], t[1]*1000 + math.floor(t[2]/1000), ARGV[1])",
			[]string{inspect.RegistryNamesKey}, name).Err()
	}
	if err := rdb.ConfigSet(ctx, "notify-keyspace-events", "").Err(); err != nil {
		return nil, err
	}

	// The defaults: no notifications on this server, so auto means off.
	rig, err := startConsole(ctx, addr, consoleOpts{match: "*"})
	if err != nil {
		return nil, err
	}
	err = settle(ctx, rig)
	if err == nil {
		out.steady, err = steadyWindow(ctx, rdb, rig, window)
	}
	if err == nil {
		out.announced, out.srcAnn, err = visibility(ctx, rig, visN, 100*time.Millisecond, 30*time.Second, announced)
	}
	if err == nil {
		out.scan, out.srcScan, err = visibility(ctx, rig, visN, 500*time.Millisecond, 3*time.Minute, foreign)
	}
	rig.close()
	if err != nil {
		return out, err
	}

	// Notifications on (the console sets notify-keyspace-events).
	rig, err = startConsole(ctx, addr, consoleOpts{match: "*", keyEvents: inspect.KeyEventsOn})
	if err != nil {
		return out, err
	}
	defer rig.close()
	err = settle(ctx, rig)
	if err == nil {
		out.steadyOn, err = steadyWindow(ctx, rdb, rig, window)
	}
	if err == nil {
		var st apiStatus
		st, err = getStatus(ctx, rig)
		out.keyEventsOn = st.KeyspaceEvents
	}
	if err == nil {
		out.notified, out.srcNotified, err = visibility(ctx, rig, visN, 100*time.Millisecond, 30*time.Second, foreign)
	}
	return out, err
}

// rows writes the case's tables.
func (c *steadyCase) rows(w func(string, ...any)) {
	w("| console | Redis CPU, %% of one core | pipelines per tick | commands per tick | single calls | SCAN calls | keys examined/s | SCAN COUNT | µs per key | last pass (s) |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range []struct {
		label string
		v     steadyResult
	}{{"defaults (no notifications on the server)", c.steady}, {"--keyspace-events=on", c.steadyOn}} {
		w("| %s | %.2f | %.2f | %.0f | %d | %d | %.0f | %d | %.3f | %.1f |\n", r.label, r.v.redisCPUPct, r.v.pipesPerTick, r.v.cmdsPerTick, r.v.singles, r.v.scans,
			r.v.keysPerSec, r.v.page, r.v.costPerKey, r.v.passSeconds)
	}
	w("\n| a new lock, listed by | p50 (ms) | p99 (ms) | max (ms) | found by |\n|---|---|---|---|---|\n")
	for _, r := range []struct {
		label string
		d     []time.Duration
		src   map[string]int
	}{{"store (announced in the registry)", c.announced, c.srcAnn},
		{"a foreign writer, keyspace notifications on", c.notified, c.srcNotified},
		{"a foreign writer, no notifications (paced SCAN)", c.scan, c.srcScan}} {
		w("| %s | %.0f | %.0f | %.0f | %s |\n", r.label, percentileMS(r.d, 50), percentileMS(r.d, 99), percentileMS(r.d, 100), sourceCounts(r.src))
	}
}

func sourceCounts(m map[string]int) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// TestBenchCase8 runs case 8 on its own (the one-pass rows and the steady
// state), for measuring discovery without the whole report:
//
//	LOCKWARDEN_BENCH_CASE=8 go test -run '^TestBenchCase8$' -count=1 -v -timeout 30m ./store/bench/
//
// LOCKWARDEN_BENCH_KEYS sets the other keys (default 1,000,000).
func TestBenchCase8(t *testing.T) {
	if os.Getenv("LOCKWARDEN_BENCH_CASE") != "8" {
		t.Skip("set LOCKWARDEN_BENCH_CASE=8 to run case 8 on its own")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	k := discoveryKeys{other: envInt("LOCKWARDEN_BENCH_KEYS", 1_000_000), locks: 10_000, limiters: 1_000}
	t0 := time.Now()
	rdb, err := discoveryServer(ctx, t, k)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&out, format, args...) }
	w("populated %d keys in %.1f s\n", k.other+k.locks+k.limiters, time.Since(t0).Seconds())
	pass, err := discoverOnce(ctx, rdb, k, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	w("one full pass (the first tick): %.2f s, Redis CPU %.0f %%, PING p99 %.2f ms\n\n", pass.seconds, pass.redisCPUPct, pass.p99)
	c, err := runSteadyCase(ctx, rdb, 20*time.Second, 20)
	c.rows(w)
	if err != nil {
		t.Log("\n" + out.String())
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
}
