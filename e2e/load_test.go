package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// The journeys compare what the console shows with what limiterLoad
// counted, so its counts must be Redis's: a call stop meets on the wire is
// counted too (it was left out, and TestJourneyHistory waited in vain for
// the chart to agree). Stopped while calls are in flight, many times over.
func TestLimiterLoadCountsWhatRedisCounts(t *testing.T) {
	srv := redistest.StartT(t)
	j := &journey{t: t, ctx: t.Context(), redis: srv, rdb: redistest.NewClient(t, srv)}
	for i := range 40 {
		name := fmt.Sprintf("%sbucket%d", redistest.Prefix(t), i)
		if err := store.New(j.rdb, nil).NewTokenBucket(name, nil).TrySetRate(j.ctx, store.TokenBucketConfig{
			Capacity: 5, IntervalMS: 200, Initial: 5}); err != nil {
			t.Fatal(err)
		}
		l := j.limiterLoad(name, 4, time.Millisecond)
		time.Sleep(15 * time.Millisecond)
		l.stop()
		got := redistest.StatsTotal(t, j.rdb, redistest.StatsKey(name))
		if got.Acquired != l.acquired.Load() || got.Rejected != l.rejected.Load() || l.errored.Load() != 0 {
			t.Fatalf("run %d: Redis counted %d acquired and %d rejected; the load %d and %d (%d errors)",
				i, got.Acquired, got.Rejected, l.acquired.Load(), l.rejected.Load(), l.errored.Load())
		}
	}
}
