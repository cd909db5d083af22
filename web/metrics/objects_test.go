package metrics

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// ringSnap is the snapshot the sampler would publish at bucket now over
// the per-bucket counts in ring (acquired only).
func ringSnap(ring map[int64]int64, now int64) *live.Snapshot {
	b := make(map[int64]inspect.Counts, len(ring))
	for k, v := range ring {
		b[k] = inspect.Counts{Acquired: v}
	}
	return &live.Snapshot{RedisUp: true, Limiters: []inspect.LimiterInfo{{Name: "api"}},
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
			oc.Observe(ringSnap(ring, now))
		}
	}
	got, uncounted := oc.totals()
	// The chain started at 105 (counting 100..104) and last stepped at 130.
	if want := sumTo(100, 130); got["api"].Acquired != want || uncounted != 0 {
		t.Fatalf("acquired %d, want %d (uncounted %d)", got["api"].Acquired, want, uncounted)
	}
	// The tick at 135 is skipped: 136 counts 131..135, bucket 130 is lost.
	for _, now := range []int64{131, 132, 133, 134, 136, 137} {
		oc.Observe(ringSnap(ring, now))
	}
	got, uncounted = oc.totals()
	if want := sumTo(100, 130) + sumTo(131, 136); got["api"].Acquired != want || uncounted != 1 {
		t.Fatalf("after a skip: acquired %d, want %d (uncounted %d, want 1)", got["api"].Acquired, want, uncounted)
	}
	// A limiter gone from the snapshot is forgotten.
	oc.Observe(&live.Snapshot{RedisUp: true, Stats: map[string]inspect.Summary{}})
	if got, _ := oc.totals(); len(got) != 0 {
		t.Fatalf("kept %v", got)
	}
}

// A scrape's count of locks comes from the same snapshot as the per-object
// series and their omitted count, so a tick landing between two collectors
// cannot make /metrics show 5 locks beside the series of a tick with none.
func TestObjectSeriesCountTheirOwnSnapshot(t *testing.T) {
	m := &Metrics{cfg: Config{Top: 2}, objects: newObjectCounters()}
	sn := &live.Snapshot{RedisUp: true, Stats: map[string]inspect.Summary{}}
	for i := range 5 {
		sn.Locks = append(sn.Locks, inspect.LockInfo{Name: fmt.Sprintf("lock-%d", i)})
	}
	ch := make(chan prometheus.Metric, 64)
	m.objectSeries(ch, sn, nil)
	close(ch)
	var locks, omitted float64
	var held int
	for metric := range ch {
		var out dto.Metric
		if err := metric.Write(&out); err != nil {
			t.Fatal(err)
		}
		switch metric.Desc() {
		case descLocks:
			locks = out.GetGauge().GetValue()
		case descLockHeld:
			held++
		case descOmitted:
			if out.GetLabel()[0].GetValue() == "lock" {
				omitted = out.GetGauge().GetValue()
			}
		}
	}
	if locks != 5 || held != 2 || omitted != 3 {
		t.Fatalf("lockwarden_locks %v, %d lock series, %v omitted; want 5, 2 and 3 from one snapshot", locks, held, omitted)
	}
}
