package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// quietReading is what Redis and this process do during a pause in which
// no case runs: with every case's load stopped, Redis executes nothing but
// the reader's own INFO.
type quietReading struct {
	pause      time.Duration
	commands   int64            // executed during the pause, INFO excluded
	calls      map[string]int64 // the same per command
	cpuPct     float64          // Redis CPU (all threads) in % of a core
	goroutines int              // of this process at the end
}

func (q quietReading) perSec() float64 { return float64(q.commands) / q.pause.Seconds() }

// topCalls lists the commands executed during the pause, most first.
func (q quietReading) topCalls(n int) string {
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range q.calls {
		if v > 0 {
			all = append(all, kv{k, v})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	var parts []string
	for i, c := range all {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", c.k, c.v))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// readQuiet measures Redis over a pause of d.
func readQuiet(ctx context.Context, rdb *redis.Client, d time.Duration) (quietReading, error) {
	before, err := readRedisUsage(ctx, rdb)
	if err != nil {
		return quietReading{}, err
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		return quietReading{}, ctx.Err()
	case <-time.After(d):
	}
	after, err := readRedisUsage(ctx, rdb)
	if err != nil {
		return quietReading{}, err
	}
	q := quietReading{pause: time.Since(start), calls: map[string]int64{}, goroutines: runtime.NumGoroutine()}
	for k, v := range after.calls {
		if k != "info" {
			q.calls[k] = v - before.calls[k]
			q.commands += v - before.calls[k]
		}
	}
	q.cpuPct = (after.cpu - before.cpu) / q.pause.Seconds() * 100
	return q, nil
}

// clientsByCommand summarises CLIENT LIST: connections counted by the last
// command each ran, e.g. "evalsha 61, subscribe 2, client 1".
func clientsByCommand(ctx context.Context, rdb *redis.Client) (string, error) {
	txt, err := rdb.ClientList(ctx).Result()
	if err != nil {
		return "", err
	}
	n := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(txt), "\n") {
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "cmd="); ok {
				n[v]++
			}
		}
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", "), nil
}

// goroutineSummary returns the goroutine profile (debug=1: identical
// stacks counted together) and its n largest groups' first frames.
func goroutineSummary(n int) (profile, top string) {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	profile = b.String()
	type group struct {
		count int
		where string
	}
	var groups []group
	_, body, _ := strings.Cut(profile, "\n") // "goroutine profile: total N"
	for _, block := range strings.Split(body, "\n\n") {
		var g group
		if _, err := fmt.Sscanf(block, "%d @", &g.count); err != nil {
			continue
		}
		// The first frame in this module or a dependency, not the runtime.
		for _, line := range strings.Split(block, "\n") {
			line, ok := strings.CutPrefix(line, "#")
			if !ok {
				continue
			}
			if f := strings.Fields(line); len(f) >= 2 && !strings.HasPrefix(f[1], "runtime.") &&
				!strings.HasPrefix(f[1], "internal/") && !strings.HasPrefix(f[1], "sync.") && !strings.HasPrefix(f[1], "time.") {
				g.where = f[1]
				break
			}
		}
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].count > groups[j].count })
	var parts []string
	for i, g := range groups {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%d × %s", g.count, g.where))
	}
	return profile, strings.Join(parts, "; ")
}

// TestBenchLeak runs cases 1-4 as the report does, then watches a quiet
// pause of 5 s: what Redis still executes (commandstats), which
// connections are open (CLIENT LIST), and this process's goroutines (the
// full profile goes to $LOCKWARDEN_BENCH_LEAK_DUMP, default a temp dir).
// LOCKWARDEN_BENCH_LEAK_CHECK=1 adds the report's check after each case;
// LOCKWARDEN_BENCH_LEAK_THEN=6 runs a console case after the pause
// (LOCKWARDEN_BENCH_ROUNDS rounds, default 1), as the report would.
//
//	LOCKWARDEN_BENCH_LEAK=rounds [LOCKWARDEN_BENCH_LEAK_C4=seconds] go test -run '^TestBenchLeak$' -count=1 -v ./e2e/bench/
func TestBenchLeak(t *testing.T) {
	rounds := envInt("LOCKWARDEN_BENCH_LEAK", 0)
	if rounds == 0 {
		t.Skip("set LOCKWARDEN_BENCH_LEAK=rounds to run cases 1-4 and watch what keeps running after them")
	}
	c4 := time.Duration(envInt("LOCKWARDEN_BENCH_LEAK_C4", 12)) * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e := newEnv(t)
	admin := e.client(1)
	q0, err := readQuiet(ctx, admin.Client, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before cases 1-4: Redis %.1f %% of a core, %.0f commands/s (%s), %d goroutines", q0.cpuPct, q0.perSec(), q0.topCalls(5), q0.goroutines)
	var md strings.Builder
	w := func(f string, a ...any) { fmt.Fprintf(&md, f, a...) }
	var chk *caseCheck
	if os.Getenv("LOCKWARDEN_BENCH_LEAK_CHECK") != "" {
		chk = newCaseCheck(t, admin.Client)
	}
	lockLimiterReport(ctx, t, e, rounds, c4, w, func(string, bool, string) {}, chk)
	t.Log("\n" + md.String())
	md.Reset()
	chk.report(w)
	if md.Len() > 0 {
		t.Log("\n" + md.String())
	}
	q, err := readQuiet(ctx, admin.Client, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	clients, err := clientsByCommand(ctx, admin.Client)
	if err != nil {
		t.Fatal(err)
	}
	profile, top := goroutineSummary(8)
	dump := os.Getenv("LOCKWARDEN_BENCH_LEAK_DUMP")
	if dump == "" {
		dump = filepath.Join(t.TempDir(), "goroutines.txt")
	}
	if err := os.WriteFile(dump, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("5 s quiet pause after cases 1-4 (%d rounds, case 4 runs of %v): Redis %.1f %% of a core, %.0f commands/s\n"+
		"executed during the pause: %s\nCLIENT LIST by last command: %s\ngoroutines %d (before %d): %s\nprofile: %s",
		rounds, c4, q.cpuPct, q.perSec(), q.topCalls(10), clients, q.goroutines, q0.goroutines, top, dump)

	// A console case after them, as in the report.
	if then := os.Getenv("LOCKWARDEN_BENCH_LEAK_THEN"); then != "" {
		md.Reset()
		chk.begin()
		t.Run("case"+then, func(t *testing.T) { runCase(ctx, t, e, then, envInt("LOCKWARDEN_BENCH_ROUNDS", 1), w) })
		chk.end(ctx, then)
		t.Log("\n" + md.String())
	}
}

// caseCheck is the report's check that each case stopped the load it
// started: once a case returns, this process's goroutines must come back
// to their count before it, and Redis must execute nothing but the
// check's own INFO during a short pause. A case that leaves a client, a
// heartbeat or a loop running fails the test, named, and its line in the
// report says what was still running. It checks that load stopped, not
// how fast anything is. A nil *caseCheck checks nothing.
type caseCheck struct {
	t     testing.TB
	admin *redis.Client
	base  int
	lines []string
}

const (
	// quietPause is how long Redis must stay idle after a case.
	quietPause = 300 * time.Millisecond
	// goroutineGrace bounds the wait for goroutines that are on their way
	// out when a case returns (a Close already made them return).
	goroutineGrace = 2 * time.Second
)

// newCaseCheck checks on admin's server through a client of its own with
// one connection and no idle minimum: a pool that keeps idle connections
// (the bench's clients do) dials a replacement in the background when the
// check's INFO takes its idle one, and that dial's HELLO would land in the
// pause as a command left running.
func newCaseCheck(t testing.TB, admin *redis.Client) *caseCheck {
	own := redis.NewClient(&redis.Options{Addr: admin.Options().Addr, PoolSize: 1})
	t.Cleanup(func() { own.Close() })
	return &caseCheck{t: t, admin: own}
}

// begin notes the goroutines before a case, once the count holds still
// for a few polls (a pool still dialling its idle connections would
// otherwise raise the baseline and hide as many leftovers).
func (c *caseCheck) begin() {
	if c == nil {
		return
	}
	c.base = runtime.NumGoroutine()
	for same, i := 0, 0; same < 3 && i < 25; i++ { // bounded: 500 ms
		time.Sleep(20 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == c.base {
			same++
		} else {
			same = 0
		}
		c.base = n
	}
}

// end checks the case named name, begun with begin.
func (c *caseCheck) end(ctx context.Context, name string) {
	if c == nil {
		return
	}
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(goroutineGrace); n > c.base && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	q, err := readQuiet(ctx, c.admin, quietPause)
	if err != nil {
		c.t.Errorf("case %s: reading Redis after it: %v", name, err)
		return
	}
	if n <= c.base && q.commands == 0 {
		c.lines = append(c.lines, fmt.Sprintf("| %s | stopped | %d (%d before) | 0 |", name, q.goroutines, c.base))
		return
	}
	_, top := goroutineSummary(3)
	what := fmt.Sprintf("%d goroutines left above the %d before it (largest groups: %s); Redis executed %d commands in %v (%s)",
		max(0, q.goroutines-c.base), c.base, top, q.commands, q.pause.Round(time.Millisecond), q.topCalls(5))
	c.t.Errorf("case %s left load running after it returned: %s", name, what)
	c.lines = append(c.lines, fmt.Sprintf("| %s | **still running**: %s | %d (%d before) | %d |", name, what, q.goroutines, c.base, q.commands))
}

// report writes the check's table.
func (c *caseCheck) report(w func(string, ...any)) {
	if c == nil || len(c.lines) == 0 {
		return
	}
	w("## Load left running after each case\n\n")
	w("After each case returns, this process's goroutines must come back to their count before it (within %v) and Redis must execute no command "+
		"but the check's own INFO during a %v pause; a case that leaves anything running fails the report.\n\n", goroutineGrace, quietPause)
	w("| case | verdict | goroutines after | commands in the pause |\n|---|---|---|---|\n")
	for _, l := range c.lines {
		w("%s\n", l)
	}
	w("\n")
}
