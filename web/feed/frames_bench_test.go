package feed

import (
	"strconv"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// benchSnapshot is case 6's console: n idle token buckets and one held
// lock, one tick after another with nothing changed but time.
func benchSnapshot(n int) *live.Snapshot {
	sn := &live.Snapshot{At: 1000, Stats: map[string]inspect.Summary{}, FirstSeen: map[string]time.Time{"held": time.UnixMilli(500)},
		Locks: []inspect.LockInfo{{Name: "held", PTTL: 10 * time.Minute, Kind: inspect.KindReentrant,
			Holders: []inspect.Holder{{ID: "11111111-1111-4111-8111-111111111111:1", Count: 1}}}},
		HolderSeen: map[string]time.Time{}}
	for i := range n {
		name := "bucket:" + strconv.Itoa(i)
		sn.Limiters = append(sn.Limiters, inspect.LimiterInfo{Name: name, Kind: inspect.KindTokenBucket, Rate: 100, IntervalMS: 1000, PerSecond: 100, Available: 100})
		sn.Stats[name] = inspect.Summary{}
	}
	return sn
}

// BenchmarkTickFrames is a tick's frame work at 1,000 limiters with only
// primed viewers: the meta is compared field by field and the whole frame
// is encoded only for a viewer that needs it.
func BenchmarkTickFrames(b *testing.B) {
	sn := benchSnapshot(1000)
	b.Run("compare-meta", func(b *testing.B) {
		f := New(Config{}) // its hub is never started: frames go nowhere
		for b.Loop() {
			f.broadcastStats(sn)
		}
	})
}
