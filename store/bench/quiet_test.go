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
			line = strings.TrimSpace(strings.TrimPrefix(line, "#"))
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
//
//	LOCKWARDEN_BENCH_LEAK=rounds [LOCKWARDEN_BENCH_LEAK_C4=seconds] go test -run '^TestBenchLeak$' -count=1 -v ./store/bench/
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
	lockLimiterReport(ctx, t, e, rounds, c4, func(f string, a ...any) { fmt.Fprintf(&md, f, a...) }, func(string, bool, string) {})
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
}
