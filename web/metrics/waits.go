package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

var (
	descLockWait = desc("lockwarden_lock_wait_seconds",
		"Waits of the lock's contended acquisitions, from the histogram store's scripts record in the stats buckets, since the console began to see them.", "name")
)

// emitLockWaits emits the wait histogram of one lock, when it waited in the
// last minute.
func emitLockWaits(ch chan<- prometheus.Metric, sn *live.Snapshot, l inspect.LockInfo, name string) {
	w := sn.Stats[l.Name].Wait
	if w == nil {
		return
	}
	buckets := make(map[float64]uint64, len(inspect.WaitClassBoundsMS))
	var cum uint64
	for i, bound := range inspect.WaitClassBoundsMS {
		cum += uint64(max(w.Total.Classes[i], 0))
		buckets[float64(bound)/1000] = cum
	}
	ch <- prometheus.MustNewConstHistogram(descLockWait, uint64(max(w.Total.Count, 0)), float64(w.Total.SumMS)/1000, buckets, name)
}
