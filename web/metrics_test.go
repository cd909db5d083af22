package web

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// ringSnap is the snapshot the sampler would publish at bucket now over
// the per-bucket counts in ring (acquired only).
func ringSnap(ring map[int64]int64, now int64) *snapshot {
	b := make(map[int64]inspect.Counts, len(ring))
	for k, v := range ring {
		b[k] = inspect.Counts{Acquired: v}
	}
	return &snapshot{RedisUp: true, Limiters: []inspect.LimiterInfo{{Name: "api"}},
		Stats: map[string]inspect.Summary{"api": inspect.Summarize(b, now)}}
}

// Every completed bucket is counted once however often a bucket is seen,
// and a skipped tick loses (and reports) buckets but never counts one twice.
func TestObjectCountersCountEachBucketOnce(t *testing.T) {
	ring := map[int64]int64{}
	for b := int64(100); b < 160; b++ {
		ring[b] = b % 7 // distinct enough that a double count shows
	}
	sumTo := func(from, to int64) (n int64) { // buckets [from, to)
		for b := from; b < to; b++ {
			n += ring[b]
		}
		return n
	}
	oc := newObjectCounters()
	// Ticks faster than buckets: each bucket is seen 1 to 3 times.
	for now := int64(105); now <= 130; now++ {
		for range 1 + now%3 {
			oc.observe(ringSnap(ring, now))
		}
	}
	got, uncounted := oc.totals()
	// The chain started at 105 (counting 100..104) and last stepped at 130.
	if want := sumTo(100, 130); got["api"].Acquired != want || uncounted != 0 {
		t.Fatalf("acquired %d, want %d (uncounted %d)", got["api"].Acquired, want, uncounted)
	}
	// The tick at 135 is skipped: 136 counts 131..135, bucket 130 is lost.
	for _, now := range []int64{131, 132, 133, 134, 136, 137} {
		oc.observe(ringSnap(ring, now))
	}
	got, uncounted = oc.totals()
	if want := sumTo(100, 130) + sumTo(131, 136); got["api"].Acquired != want || uncounted != 1 {
		t.Fatalf("after a skip: acquired %d, want %d (uncounted %d, want 1)", got["api"].Acquired, want, uncounted)
	}
	// A limiter gone from the snapshot is forgotten.
	oc.observe(&snapshot{RedisUp: true, Stats: map[string]inspect.Summary{}})
	if got, _ := oc.totals(); len(got) != 0 {
		t.Fatalf("kept %v", got)
	}
}

// The live counters reach exactly what the limiter did, and stay there.
func TestMetricsLimiterCountersLive(t *testing.T) {
	e := newEnv(t, fastTicks)
	rl := e.prefix + "rl"
	e.makeBucket(rl, 3, "100000")
	for range 5 {
		_, _ = e.app.NewTokenBucket(rl, nil).TryAcquire(t.Context(), 1)
	}
	acq := fmt.Sprintf("lockwarden_limiter_acquired_total{name=%q} 3\n", rl)
	rej := fmt.Sprintf("lockwarden_limiter_rejected_total{name=%q} 2\n", rl)
	var b []byte
	eventually(t, 5*time.Second, "the limiter counters", func() bool {
		_, _, b = e.do("GET", "/metrics", nil, nil)
		return bytes.Contains(b, []byte(acq)) && bytes.Contains(b, []byte(rej))
	})
	// Once the outcomes left the window, later chain steps add nothing.
	ticks := e.srv.metrics.ticks.Load()
	eventually(t, 5*time.Second, "2 s of ticks", func() bool { return e.srv.metrics.ticks.Load() > ticks+40 })
	_, _, b = e.do("GET", "/metrics", nil, nil)
	if !bytes.Contains(b, []byte(acq)) || !bytes.Contains(b, []byte(rej)) {
		t.Errorf("counters moved after the traffic stopped:\n%s", grepLines(b, "lockwarden_limiter_"))
	}
}

// --metrics-top and --metrics-match bound the per-object series.
func TestMetricsCardinalityBounded(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		fastTicks(c)
		c.MetricsTop = 2
		c.MetricsMatch = strings.TrimSuffix(c.Match, "*") + "keep:*"
	})
	for i := range 4 {
		e.makeLock(fmt.Sprintf("%skeep:%d", e.prefix, i), "w", 1, time.Minute)
	}
	e.makeLock(e.prefix+"other", "w", 1, time.Minute)
	var b []byte
	eventually(t, 5*time.Second, "five locks sampled", func() bool {
		_, _, b = e.do("GET", "/metrics", nil, nil)
		return bytes.Contains(b, []byte("lockwarden_locks 5\n"))
	})
	if n := len(regexp.MustCompile(`(?m)^lockwarden_lock_held\{`).FindAll(b, -1)); n != 2 {
		t.Errorf("%d lock series, want 2:\n%s", n, grepLines(b, "lockwarden_lock_"))
	}
	if bytes.Contains(b, []byte(e.prefix+"other")) {
		t.Error("a lock outside --metrics-match has a series")
	}
	if !bytes.Contains(b, []byte(`lockwarden_metrics_omitted_objects{kind="lock"} 3`)) {
		t.Errorf("omitted count missing:\n%s", grepLines(b, "omitted"))
	}
}

// promtool accepts the exposition, including names that need escaping.
func TestMetricsPromtoolCheck(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("LOCKWARDEN_REQUIRE_BROWSER") == "1" || os.Getenv("LOCKWARDEN_REQUIRE_PROMTOOL") == "1" {
			t.Fatalf("promtool missing (make deps installs it): %v", err)
		}
		t.Skip("promtool missing (run make deps)")
	}
	e := newEnv(t, func(c *Config) {
		fastTicks(c)
		c.Alerts = AlertConfig{HeldTooLong: time.Millisecond} // an alert at once: the held lock
	})
	rl := e.prefix + "rl \"quoted\"\\back\nline"
	e.makeBucket(rl, 1, "100000")
	e.makeLock(e.prefix+"lock", "w", 1, time.Minute)
	for range 3 {
		_, _ = e.app.NewTokenBucket(rl, nil).TryAcquire(t.Context(), 1)
	}
	var b []byte
	eventually(t, 5*time.Second, "a limiter, a lock and an alert in /metrics", func() bool {
		_, _, b = e.do("GET", "/metrics", nil, nil)
		return bytes.Contains(b, []byte("lockwarden_limiter_acquired_total{")) &&
			bytes.Contains(b, []byte("lockwarden_lock_held{")) && bytes.Contains(b, []byte("lockwarden_alert_firing{"))
	})
	cmd := exec.CommandContext(t.Context(), promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(b)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

func grepLines(b []byte, sub string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
