package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/whatif"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// demoWhatIfRuns run the demo's traffic at once, each for demoWhatIfSpan:
// three 10 s steps and the parts of two more.
const (
	demoWhatIfRuns = 3
	demoWhatIfSpan = 32 * time.Second
)

// The demo's limiters: each kind with a what-if, bursty (the login waves),
// steady above its rate (the API), flooded, a counter, Redisson's.
var demoWhatIfLimiters = []string{demoAPI, demoLogin, demoFlood, demoHits, demoPartner}

// TestWhatIfReplaysDemoTraffic runs the demo's own traffic generator three
// times at once on a real redis-server and reads each limiter's stats
// buckets as the console does. Replayed at each limiter's own settings,
// from the 200 ms buckets and from 10 s steps folded as the console's
// history folds them, the demand must give the rejections recorded within
// 2 % (or one rejection) every time.
func TestWhatIfReplaysDemoTraffic(t *testing.T) {
	rdb := trafficClient(t)
	type run struct {
		buckets map[string]map[int64]inspect.Counts
		infos   map[string]*inspect.LimiterInfo
	}
	runs := make([]*run, demoWhatIfRuns)
	var wg sync.WaitGroup
	for i := range runs {
		prefix := fmt.Sprintf("%s%d:", redistest.Prefix(t), i)
		wg.Go(func() {
			b, infos := recordDemo(t, rdb, prefix)
			runs[i] = &run{b, infos}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, r := range runs {
		for _, name := range demoWhatIfLimiters {
			t.Run(fmt.Sprintf("%d/%s", i, name), func(t *testing.T) {
				info := r.infos[name]
				lim := whatif.FromInfo(info)
				first, counts := consecutiveBuckets(r.buckets[name])
				for _, fold := range []string{"200 ms", "10 s"} {
					demand := whatif.BucketSeries(first, counts)
					if fold == "10 s" {
						demand = whatif.HistorySeries(first, counts, 10_000)
					}
					res, err := whatif.Replay(whatif.Request{Limiter: lim, Proposed: lim.Current, Demand: demand})
					if err != nil {
						t.Fatal(err)
					}
					// The same demand spread evenly within each step: the
					// replay before it was fitted to what happened.
					plain := lim
					plain.Current = whatif.Settings{}
					fitted, err := whatif.Fit(plain, demand, whatif.Series{})
					if err != nil {
						t.Fatal(err)
					}
					even, err := fitted.Replay(lim.Current, 0)
					if err != nil {
						t.Fatal(err)
					}
					c := res.Check
					t.Logf("%s at %+v, %s steps: %d attempts; predicted %d (%d to %d), recorded %d, error %+.2f %%; spread evenly %d (%+.2f %%)",
						name, lim.Current, fold, res.Attempts, res.Predicted.Rejected, res.Predicted.Low, res.Predicted.High,
						c.Recorded, c.ErrorPct, even.Predicted.Rejected, pct(even.Predicted.Rejected, c.Recorded))
					if c.Recorded != res.Actual.Rejected || c.Replayed != res.Predicted.Rejected || c.Recorded < 20 {
						t.Fatalf("check %+v beside %+v: want the recorded rejections (20 or more) and the prediction at today's settings", c, res)
					}
					if d := c.Replayed - c.Recorded; !c.Trusted() && d*d > 1 {
						t.Errorf("%s steps: replayed %d rejections at today's settings, recorded %d: %+.2f %%, want within 2 %%",
							fold, c.Replayed, c.Recorded, c.ErrorPct)
					}
				}
			})
		}
	}
}

func pct(got, want int64) float64 { return 100 * float64(got-want) / math.Max(float64(want), 1) }

// recordDemo runs the demo traffic under prefix for demoWhatIfSpan and
// returns each of demoWhatIfLimiters' stats buckets (read every 500 ms:
// the stats hash keeps only its newest; a bucket's counts are the largest
// read) and the console's view of it (read while the traffic runs: the
// counter's key lives only while hits come).
func recordDemo(t *testing.T, rdb *redis.Client, prefix string) (map[string]map[int64]inspect.Counts, map[string]*inspect.LimiterInfo) {
	buckets := map[string]map[int64]inspect.Counts{}
	infos := map[string]*inspect.LimiterInfo{}
	var mu sync.Mutex
	read := func(ctx context.Context) {
		for _, name := range demoWhatIfLimiters {
			fields, err := rdb.HGetAll(ctx, redistest.StatsKey(prefix+name)).Result()
			if err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			mu.Lock()
			if buckets[name] == nil {
				buckets[name] = map[int64]inspect.Counts{}
			}
			for b, c := range inspect.ReadStatsRing(fields) {
				old := buckets[name][b]
				buckets[name][b] = inspect.Counts{Acquired: max(old.Acquired, c.Acquired), Rejected: max(old.Rejected, c.Rejected), Errors: max(old.Errors, c.Errors)}
			}
			mu.Unlock()
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), demoWhatIfSpan)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		insp := inspect.New(rdb, &inspect.Options{Patterns: trafficPatterns(prefix)})
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			read(ctx)
			for _, name := range demoWhatIfLimiters {
				if infos[name] != nil {
					continue
				}
				if info, err := insp.GetLimiter(ctx, prefix+name); err == nil {
					mu.Lock()
					infos[name] = info
					mu.Unlock()
				}
			}
		}
	})
	var n trafficCounts
	if err := runTrafficCounted(ctx, rdb, trafficConfig{Prefix: prefix}, &n); err != nil {
		t.Error(err)
	}
	wg.Wait()
	read(t.Context())
	for _, name := range demoWhatIfLimiters {
		if infos[name] == nil {
			t.Errorf("%s: the console never read it", prefix+name)
		}
	}
	return buckets, infos
}

// consecutiveBuckets lays buckets out from the first to the last.
func consecutiveBuckets(buckets map[int64]inspect.Counts) (int64, []inspect.Counts) {
	if len(buckets) == 0 {
		return 0, nil
	}
	keys := slices.Sorted(maps.Keys(buckets))
	counts := make([]inspect.Counts, keys[len(keys)-1]-keys[0]+1)
	for _, b := range keys {
		counts[b-keys[0]] = buckets[b]
	}
	return keys[0], counts
}
