package whatif

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// One private redis-server for the package's tests.
func TestMain(m *testing.M) { redistest.Main(m) }

// demandPattern is attempts per second, one second each: ten times the
// rate, one attempt at 1.5 s while the limiter recovers, ten times the rate
// again. Every limiter below admits 25 a second.
//
// The driver cannot always keep time: on a loaded machine, with -race, a
// goroutine can wait 100 ms and more to run, and such a stall is a gap
// inside a step that the arrival model spreads out. So the limiters
// and the pattern make such gaps cost nothing: the bucket banks 400 ms of
// permits; the 1 s windows open at the first attempt, at 1.5 s and at once
// when the previous one ends, and each overlaps at least 500 ms of dense
// demand, so each fills whatever was dropped; sliding grants all return
// in the quiet second or after the end. A replay of the wrong algorithm
// still misses by more than 2 %: a fixed window of this rate admits 75 of
// the pattern, a sliding one 51.
var demandPattern = []int64{250, 1, 250}

// TestReplayAtTodaysRateReproducesRecordedRejections is issue 21's check:
// a real limiter driven through store on a real redis-server records its
// outcomes in its stats hash; those 200 ms buckets, read as the console
// reads them, replayed as they are and folded into 1 s steps, at the
// limiter's own settings as the console reads them, must give the
// rejections it recorded within 2 %. Redisson's limiters are replayed as
// lower bounds (their own clients reject without a trace); here every
// attempt goes through store, so their error is logged too.
func TestReplayAtTodaysRateReproducesRecordedRejections(t *testing.T) {
	cases := []struct {
		name string
		rule *inspect.CounterRule // a counter's limit and window, as registered with the console
		// setup configures the limiter at name and returns one attempt.
		setup func(t *testing.T, app *store.Client, name string) tryFunc
	}{
		{"token bucket", nil, func(t *testing.T, app *store.Client, name string) tryFunc {
			b := app.NewTokenBucket(name, nil)
			if err := b.Init(t.Context(), store.TokenBucketConfig{Capacity: 10, IntervalMS: 40, Initial: 10}); err != nil {
				t.Fatal(err)
			}
			return func(ctx context.Context) (store.Result, error) { return b.TryAcquire(ctx, 1) }
		}},
		{"counter", &inspect.CounterRule{Limit: 25, Window: time.Second}, func(t *testing.T, app *store.Client, name string) tryFunc {
			k := app.NewCounter(name, &store.CounterOptions{Limit: 25, Window: time.Second})
			return func(ctx context.Context) (store.Result, error) { return k.TryAcquire(ctx, 1) }
		}},
		{"redisson sliding window", nil, redissonSetup(store.RedissonSliding)},
		{"redisson fixed window", nil, redissonSetup(store.RedissonFixed)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buckets map[int64]inspect.Counts
			var info *inspect.LimiterInfo
			for run := 1; ; run++ {
				var stall time.Duration
				buckets, info, stall = record(t, tc.rule, tc.setup)
				if stall <= maxStall {
					break
				}
				if run == 3 {
					t.Fatalf("the driver stalled for %v inside a busy second in %d runs: the machine is too loaded to make the demand", stall, run)
				}
				t.Logf("the driver stalled for %v inside a busy second: the demand was not made; again on a new key", stall)
			}
			lim := FromInfo(info)
			for _, stepMS := range []int64{inspect.BucketMS, 1000} {
				demand, err := FoldBuckets(buckets, stepMS)
				if err != nil {
					t.Fatal(err)
				}
				res, err := Replay(Request{Limiter: lim, Proposed: lim.Current, Demand: demand})
				if err != nil {
					t.Fatal(err)
				}
				rel := float64(res.Predicted.Rejected-res.Actual.Rejected) / float64(res.Actual.Rejected)
				t.Logf("%s at %+v, %d ms steps: %d attempts, recorded %+v, replayed %+v: rejections %+.2f %%",
					lim.Kind, lim.Current, stepMS, res.Attempts, res.Actual, res.Predicted, 100*rel)
				if res.Actual.Rejected < 100 || res.LowerBound != info.RejectionsHidden {
					t.Fatalf("result %+v: the pattern should have been rejected 100 times or more; lower bound %v", res, info.RejectionsHidden)
				}
				switch {
				case lim.Kind == inspect.KindRedissonLimiter:
					if !res.LowerBound || res.Predicted.Admitted > res.Attempts {
						t.Errorf("result %+v: want a lower bound admitting at most the demand", res)
					}
				case math.Abs(rel) > 0.02:
					t.Errorf("%d ms steps: predicted rejections %d are %+.2f %% off the recorded %d; want within 2 %%",
						stepMS, res.Predicted.Rejected, 100*rel, res.Actual.Rejected)
					// Step by step, to tell the model's error from the driver's.
					bySteps, _ := Replay(Request{Limiter: lim, Proposed: lim.Current, Demand: demand, PointMS: stepMS})
					for _, p := range bySteps.Points {
						t.Logf("%s: %d attempts, recorded %+v, replayed %+v", p.T.Format("15:04:05.000"), p.Attempts, p.Actual, p.Predicted)
					}
				}
			}
		})
	}
}

// maxStall is the longest gap between two attempts of a busy second that
// the pattern tolerates (see demandPattern); a run with a longer one did
// not make the demand the test is about.
const maxStall = 150 * time.Millisecond

// record configures a limiter on a new key, drives demandPattern through
// it and returns its stats buckets, the console's view of it, and the
// driver's longest stall.
func record(t *testing.T, rule *inspect.CounterRule, setup func(*testing.T, *store.Client, string) tryFunc) (map[int64]inspect.Counts, *inspect.LimiterInfo, time.Duration) {
	rdb := redistest.Client(t)
	name := redistest.Prefix(t) + "limiter"
	var opts inspect.Options
	if rule != nil {
		r := *rule
		r.Pattern = name
		opts.Patterns.Counters = []inspect.CounterRule{r}
	}
	try := setup(t, store.New(rdb, &store.Options{NoRegistry: true}), name)
	// The console's view is read right after the first attempt, while
	// the key is sure to exist: a counter's expires with its window.
	var info *inspect.LimiterInfo
	buckets, stall := drive(t, rdb, name, func(ctx context.Context) error {
		_, err := try(ctx)
		return err
	}, func() {
		var err error
		if info, err = inspect.New(rdb, &opts).GetLimiter(t.Context(), name); err != nil {
			t.Fatal(err)
		}
	})
	return buckets, info, stall
}

// tryFunc is one attempt on a limiter.
type tryFunc func(context.Context) (store.Result, error)

// redissonSetup configures a Redisson limiter of 25 permits a second kept
// as mode's Redisson keeps it.
func redissonSetup(mode store.RedissonMode) func(*testing.T, *store.Client, string) tryFunc {
	return func(t *testing.T, app *store.Client, name string) tryFunc {
		l := app.NewRedissonLimiter(name, &store.RedissonLimiterOptions{Mode: mode})
		if _, err := l.TrySetRate(t.Context(), store.RateOverall, 25, time.Second); err != nil {
			t.Fatal(err)
		}
		return func(ctx context.Context) (store.Result, error) { return l.TryAcquire(ctx, 1) }
	}
}

// drive makes demandPattern's attempts, spread evenly over each second of
// Redis time from the next whole second, calls first right after the first, and
// returns the stats buckets (bucket -> counts), which must hold every
// attempt made, and the longest gap between two attempts of a busy second.
// The stats hash keeps only its newest buckets, so it is read every 500 ms
// while the attempts go on, and a bucket's counts are the largest read
// (they only grow).
func drive(t *testing.T, rdb *redis.Client, name string, try func(context.Context) error, first func()) (map[int64]inspect.Counts, time.Duration) {
	ctx := t.Context()
	redisNow := redistest.NowMS(t, rdb)
	// Local time minus Redis time: a round trip's worth on one host.
	skew := time.Now().UnixMilli() - redisNow
	start := (redisNow/1000 + 1) * 1000

	var mu sync.Mutex
	buckets := map[int64]inspect.Counts{}
	read := func() {
		fields, err := rdb.HGetAll(ctx, redistest.StatsKey(name)).Result()
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for b, c := range inspect.ReadStatsRing(fields) {
			old := buckets[b]
			buckets[b] = inspect.Counts{Acquired: max(old.Acquired, c.Acquired), Rejected: max(old.Rejected, c.Rejected), Errors: max(old.Errors, c.Errors)}
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(done)
	wg.Go(func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				read()
			}
		}
	})

	// Attempt j of a second of n belongs to the j-th n-th of it, as in the
	// arrival model: one the driver cannot send before its share ends is
	// dropped, not sent late, so a stalled driver leaves a gap rather than
	// a burst or an attempt in the next second, and the stats record only
	// what was sent.
	var sent, dropped int64
	var stall time.Duration
	for i, n := range demandPattern {
		var prev time.Time
		for j := range n {
			slot := time.UnixMilli(start + int64(i)*1000 + (2*j+1)*1000/(2*n) + skew)
			time.Sleep(time.Until(slot))
			if time.Since(slot) >= time.Second/time.Duration(2*n) {
				dropped++
				continue
			}
			now := time.Now()
			if !prev.IsZero() {
				stall = max(stall, now.Sub(prev))
			}
			prev = now
			if err := try(ctx); err != nil {
				t.Fatal(err)
			}
			if sent++; sent == 1 {
				first()
			}
		}
	}
	t.Logf("%d attempts sent, %d dropped by a stalled driver (longest gap %v)", sent, dropped, stall)
	read()
	mu.Lock()
	defer mu.Unlock()
	var recorded inspect.Counts
	for _, c := range buckets {
		recorded = recorded.Add(c)
	}
	if recorded.Acquired+recorded.Rejected != sent || recorded.Errors != 0 {
		t.Fatalf("stats hold %+v, %d attempts were made", recorded, sent)
	}
	return buckets, stall
}
