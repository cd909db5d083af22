package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// A lock's wait totals become a cumulative histogram in seconds with the
// class bounds as buckets (its waiters gauge is emitted with the other lock
// series, objects.go).
func TestLockWaitHistogram(t *testing.T) {
	var total inspect.WaitTotals
	total.Classes[0], total.Classes[4], total.Classes[9] = 3, 2, 1 // <=1 ms, <=100 ms, >10 s
	total.Count, total.SumMS = 6, 3+150+12000
	l := inspect.LockInfo{Name: "job", WaitersTotal: 4}
	sn := &live.Snapshot{Stats: map[string]inspect.Summary{"job": {Wait: &inspect.WaitWindows{Total: total}}}}
	ch := make(chan prometheus.Metric, 4)
	emitLockWaits(ch, sn, l, "job")
	close(ch)
	var hist *dto.Histogram
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		if m.Desc() != descLockWait {
			t.Fatalf("emitted %v, want only the wait histogram", m.Desc())
		}
		hist = out.GetHistogram()
	}
	if hist == nil || hist.GetSampleCount() != 6 || hist.GetSampleSum() != 12.153 {
		t.Fatalf("histogram %v", hist)
	}
	want := map[float64]uint64{0.001: 3, 0.003: 3, 0.01: 3, 0.03: 3, 0.1: 5, 0.3: 5, 1: 5, 3: 5, 10: 5}
	for _, b := range hist.GetBucket() {
		if want[b.GetUpperBound()] != b.GetCumulativeCount() {
			t.Errorf("bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want[b.GetUpperBound()])
		}
		delete(want, b.GetUpperBound())
	}
	if len(want) != 0 {
		t.Errorf("missing buckets %v", want)
	}
	// Without waits in the last minute there is no histogram.
	ch = make(chan prometheus.Metric, 4)
	emitLockWaits(ch, &live.Snapshot{Stats: map[string]inspect.Summary{}}, l, "job")
	if close(ch); len(ch) != 0 {
		t.Fatalf("%d series for a lock without waits, want none", len(ch))
	}
}
