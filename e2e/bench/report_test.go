package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBenchReport is the runner behind `make bench`: it runs every case for
// every peer, interleaved within each round, and writes the report to
// $LOCKWARDEN_BENCH_OUT. Without that variable it is skipped.
func TestBenchReport(t *testing.T) {
	out := os.Getenv("LOCKWARDEN_BENCH_OUT")
	if out == "" {
		t.Skip("set LOCKWARDEN_BENCH_OUT=path (make bench does) to run the benchmarks")
	}
	rounds := 5
	ctx, cancel := context.WithTimeout(context.Background(), 32*time.Minute)
	defer cancel()
	e := newEnv(t)
	var md strings.Builder
	var targets []struct{ what, result string }
	target := func(what string, ok bool, got string) {
		verdict := "met"
		if !ok {
			verdict = "**missed**"
		}
		targets = append(targets, struct{ what, result string }{what, verdict + ": " + got})
	}
	w := func(format string, args ...any) { fmt.Fprintf(&md, format, args...) }

	admin := e.client(1)
	redisVer, _ := admin.Info(ctx, "server").Result()
	w("# lockwarden benchmarks\n\n")
	w("Written by `make bench` (%s). Every figure is the median of %d rounds with the min–max in brackets; "+
		"in each round every implementation runs the same case one after the other on the same private redis-server, "+
		"and ratios are taken per round, then their median. The machine is shared and noisy: compare ratios, not absolute numbers.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), rounds)
	w("- Machine: %s\n- Redis: %s\n- Peers: %s\n- Command: `make bench` = `LOCKWARDEN_BENCH_OUT=BENCHMARKS.md go test -run '^TestBenchReport$' -count=1 -timeout 35m -v ./e2e/bench/`\n\n",
		machine(), infoField(redisVer, "redis_version"), peerVersions())

	// Raw limit: EVALSHA of a trivial script at the same concurrencies.
	w("## Raw limit: redis-benchmark, EVALSHA of `return 1`\n\n| clients | requests/s |\n|---|---|\n")
	sha, _ := admin.ScriptLoad(ctx, "return 1").Result()
	for _, c := range []int{1, 16, 64} {
		w("| %d | %s |\n", c, redisBenchmark(ctx, e.addr, c, sha))
	}
	w("\nA lock + unlock pair is two round trips, so the pair ceiling is about half of these.\n\n")

	chk := newCaseCheck(t, admin.Client)
	lockLimiterReport(ctx, t, e, rounds, 12*time.Second, w, target, chk)
	// Cases 5-9 and 10 run as subtests so that what they keep for the
	// test's lifetime (t.Cleanup: case 8's filled servers, case 10's
	// Cluster) stops when they end, not at the end of the report.
	chk.begin()
	t.Run("console", func(t *testing.T) { consoleReport(ctx, t, e, w, target) })
	chk.end(ctx, "5-9")
	chk.begin()
	t.Run("cluster", func(t *testing.T) { clusterReport(ctx, t, w) })
	chk.end(ctx, "10")
	chk.report(w)
	w("## Targets in this run (medians)\n\n| target | result |\n|---|---|\n")
	for _, tg := range targets {
		w("| %s | %s |\n", tg.what, tg.result)
	}

	if err := os.WriteFile(out, []byte(md.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", out)
}

func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return "?"
}

// peerVersions asks the go command: test binaries carry no module list.
func peerVersions() string {
	b, err := exec.Command("go", "list", "-m", "github.com/bsm/redislock", "github.com/go-redsync/redsync/v4",
		"github.com/go-redis/redis_rate/v10", "github.com/redis/go-redis/v9").Output()
	if err != nil {
		return "? (" + err.Error() + ")"
	}
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", ", ")), " ")
}

// redisBenchmark runs redis-benchmark against addr and returns its rate.
func redisBenchmark(ctx context.Context, addr string, clients int, sha string) string {
	host, port, _ := strings.Cut(addr, ":")
	n := 20000 * max(1, min(clients, 8))
	cmd := exec.CommandContext(ctx, "redis-benchmark", "-h", host, "-p", port, "-c", fmt.Sprint(clients),
		"-n", fmt.Sprint(n), "-q", "EVALSHA", sha, "0")
	b, err := cmd.Output()
	if err != nil {
		return "redis-benchmark failed: " + err.Error()
	}
	// "EVALSHA ...: 12345.67 requests per second, p50=..." (newer) or with \r progress.
	s := string(b)
	if i := strings.LastIndex(s, "\r"); i >= 0 {
		s = s[i+1:]
	}
	if _, after, ok := strings.Cut(s, ": "); ok {
		if v, _, ok := strings.Cut(after, " requests per second"); ok {
			return strings.TrimSpace(v)
		}
	}
	return strings.TrimSpace(s)
}
