package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchCase runs case 1 or one console case (5, 6, 7, 9 or 10) on its
// own and prints its rows, for measuring a change without the whole
// 15-minute report:
//
//	LOCKWARDEN_BENCH_CASE=5 go test -run '^TestBenchCase$' -count=1 -v ./e2e/bench/
//
// LOCKWARDEN_BENCH_ROUNDS sets the rounds (default 3); for case 6,
// LOCKWARDEN_BENCH_FANOUT=1000x1000 runs that row alone (limiters x
// viewers). The full report runs cases 1-4 first, which leave ~15,000
// keys behind that every SCAN walks;
// LOCKWARDEN_BENCH_FILLER (default 15000) puts as many unrelated small
// hashes in place so the defaults rows compare (case 1 gets none: it
// scans nothing).
func TestBenchCase(t *testing.T) {
	which := os.Getenv("LOCKWARDEN_BENCH_CASE")
	if which == "" {
		t.Skip("set LOCKWARDEN_BENCH_CASE=1, 5, 6, 7, 9 or 10 to run one case")
	}
	if which == "8" {
		t.Skip("case 8 runs in TestBenchCase8")
	}
	rounds := envInt("LOCKWARDEN_BENCH_ROUNDS", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	e := newEnv(t)
	admin := e.client(1)
	filler := envInt("LOCKWARDEN_BENCH_FILLER", 15000)
	if which == "1" {
		filler = 0
	}
	fillPrefix := e.prefix("filler")
	defer deleteByPrefix(ctx, admin.Client, fillPrefix)
	for i := 0; i < filler; i += 1000 { // bounded: filler/1000 pipelines
		p := admin.Pipeline()
		for j := i; j < min(filler, i+1000); j++ {
			p.HSet(ctx, fillPrefix+strconv.Itoa(j), "a", "1", "b", "2", "c", "3")
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&out, format, args...) }
	chk := newCaseCheck(t, admin.Client)
	chk.begin()
	// A subtest, so what the case keeps for the test's lifetime (case
	// 10's Cluster) stops before the check.
	t.Run("case"+which, func(t *testing.T) { runCase(ctx, t, e, which, rounds, w) })
	chk.end(ctx, which)
	chk.report(w)
	t.Log("\n" + out.String())
}

// runCase runs case which (1, 5, 6, 7, 9 or 10) for rounds rounds and
// writes its rows with w.
func runCase(ctx context.Context, t *testing.T, e *env, which string, rounds int, w func(string, ...any)) {
	switch which {
	case "1":
		target := func(what string, ok bool, got string) { w("target %s: %v (%s)\n", what, ok, got) }
		case1Report(ctx, t, e, rounds, w, target)
	case "5":
		for _, n := range envInts("LOCKWARDEN_BENCH_LIMITERS", []int{1000}) {
			only, disc, _, err := samplerRounds(ctx, e, n, rounds, 4*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []struct {
				label string
				rs    []samplerResult
			}{{"sampling only", only}, {"defaults (paced walk, 60 s pass)", disc}} {
				for _, r := range m.rs {
					w("case 5 | %d limiters | %-32s | ticks/s %.2f | round trips/tick %.2f | pipes/tick %.2f | cmds/tick %.0f | executed/tick %.0f | evals/tick %.0f | pipe ms %.1f | Redis CPU %.1f %% | frame KB %.1f\n",
						n, m.label, r.ticks, r.roundTrips, r.pipes, r.cmds, r.executed, r.evals, r.pipeMS, r.redisCPUPct, r.frameKB)
				}
			}
		}
	case "6":
		for _, c := range fanoutConfigs(os.Getenv("LOCKWARDEN_BENCH_FANOUT")) {
			prefix, cleanup, err := fanoutObjects(ctx, e, c.limiters)
			if err != nil {
				cleanup()
				t.Fatal(err)
			}
			for r := 0; r < rounds; r++ {
				v, err := fanout(ctx, e, prefix, c.viewers, 5*time.Second)
				if err != nil {
					cleanup()
					t.Fatalf("%+v: %v", c, err)
				}
				w("case 6 | %4d limiters | %4d viewers | console CPU %.1f %% | viewers CPU %.1f %% | p50 %.1f ms | p99 %.1f ms | max %.1f ms | frames/viewer/tick %.3f | dropped %d | cmds/tick %.0f | rt/tick %.2f | Redis CPU %.1f %% | frame KB %.1f\n",
					c.limiters, c.viewers, v.consoleCPU, v.viewersCPU, v.p50, v.p99, v.max, v.perViewer, v.closed, v.cmds, v.roundTrips, v.redisCPUPct, v.frameKB)
			}
			cleanup()
		}
	case "7":
		for r := 0; r < rounds; r++ {
			v, err := eventLatency(ctx, e, 1000, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			w("case 7 | p50 %.1f ms | p99 %.1f ms | max %.1f ms | lost %d\n", v.p50, v.p99, v.max, v.lost)
		}
	case "10":
		clusterReport(ctx, t, w)
	case "9":
		target := func(what string, ok bool, got string) { w("target %s: %v (%s)\n", what, ok, got) }
		if err := pagesReport(ctx, e, w, target); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("LOCKWARDEN_BENCH_CASE=%q: only 1, 5, 6, 7, 9 and 10 run on their own", which)
	}
}

// fanoutConfigs are case 6's configurations: all three, or those of sel
// ("1000x1000,100x1": limiters x viewers), so one row can be measured
// alone.
func fanoutConfigs(sel string) []fanoutConfig {
	all := []fanoutConfig{{100, 1}, {100, 1000}, {1000, 1000}}
	var out []fanoutConfig
	for _, f := range strings.Split(sel, ",") {
		var c fanoutConfig
		if _, err := fmt.Sscanf(strings.TrimSpace(f), "%dx%d", &c.limiters, &c.viewers); err == nil && c.limiters > 0 && c.viewers > 0 {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

type fanoutConfig struct{ limiters, viewers int }

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func envInts(name string, def []int) []int {
	var out []int
	for _, f := range strings.Split(os.Getenv(name), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return def
	}
	return out
}
