package whatif

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
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

// pacedDemand is attempts per second, spread evenly within each second:
// above the limit, below it, far above, near it, almost none, above.
// Every limiter below admits 20 a second today.
var pacedDemand = []int64{30, 30, 30, 30, 10, 10, 10, 10, 45, 45, 45, 45, 25, 25, 25, 25, 2, 2, 2, 2, 35, 35, 35, 35}

// A kind's limiter at today's settings and two twins met by the same
// attempts: at a lower rate and at a higher one.
type pacedKind struct {
	name string
	kind inspect.Kind
	// settings: today's, the lower twin's, the higher twin's.
	settings [3]Settings
	// setup configures a limiter at name at s and returns one attempt.
	setup func(t *testing.T, app *store.Client, name string, s Settings) tryFunc
}

var pacedKinds = []pacedKind{
	{"token bucket", inspect.KindTokenBucket, [3]Settings{{10, 50}, {5, 100}, {20, 25}},
		func(t *testing.T, app *store.Client, name string, s Settings) tryFunc {
			b := app.NewTokenBucket(name, nil)
			if err := b.TrySetRate(t.Context(), store.TokenBucketConfig{Capacity: s.Rate, IntervalMS: s.IntervalMS, Initial: s.Rate}); err != nil {
				t.Fatal(err)
			}
			return func(ctx context.Context) (store.Result, error) { return b.TryAcquire(ctx, 1) }
		}},
	{"counter", inspect.KindCounter, [3]Settings{{20, 1000}, {10, 1000}, {40, 2000}},
		func(t *testing.T, app *store.Client, name string, s Settings) tryFunc {
			k := app.NewCounter(name, &store.LimiterOptions{Limit: s.Rate, Window: time.Duration(s.IntervalMS) * time.Millisecond})
			return func(ctx context.Context) (store.Result, error) { return k.TryAcquire(ctx, 1) }
		}},
	{"redisson sliding window", inspect.KindRedissonLimiter, [3]Settings{{20, 1000}, {10, 1000}, {30, 1000}}, redissonSetup(store.RedissonSliding)},
	{"redisson fixed window", inspect.KindRedissonLimiter, [3]Settings{{20, 1000}, {10, 1000}, {60, 2000}}, redissonSetup(store.RedissonFixed)},
}

// runs is how many times each kind is driven, all at once.
const runs = 3

// TestReplayOfPacedTraffic drives real limiters of each kind through store
// on a real redis-server, three times each, with paced demand that changes
// rate every 4 s, and reads the stats buckets as the console does. Replayed
// at today's settings, from the 200 ms buckets and from 10 s steps folded
// as web/history folds them, the demand must give the rejections recorded
// within 2 % (or one rejection). The same attempts also met two twins at a
// lower and a higher rate: what each recorded must lie in the band the
// replay of today's limiter predicts for the twin's settings.
func TestReplayOfPacedTraffic(t *testing.T) {
	type run struct {
		kind    pacedKind
		buckets [3]map[int64]inspect.Counts
		info    *inspect.LimiterInfo
	}
	var all []*run
	var wg sync.WaitGroup
	for _, k := range pacedKinds {
		for i := range runs {
			r := &run{kind: k}
			all = append(all, r)
			prefix := fmt.Sprintf("%s%d:", redistest.Prefix(t), len(all))
			wg.Go(func() { r.buckets, r.info = drivePaced(t, prefix, k, nil) })
			_ = i
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, r := range all {
		t.Run(fmt.Sprintf("%s/%d", r.kind.name, i%runs), func(t *testing.T) {
			lim := FromInfo(r.info)
			if lim.Current != r.kind.settings[0] {
				t.Fatalf("the console reads %+v, want %+v", lim.Current, r.kind.settings[0])
			}
			for _, fold := range []string{"200 ms", "10 s"} {
				demand := foldAs(fold, r.buckets[0])
				checkToday(t, fold, lim, demand)
				for twin := 1; twin <= 2; twin++ {
					res, err := Replay(Request{Limiter: lim, Proposed: r.kind.settings[twin], Demand: demand})
					if err != nil {
						t.Fatal(err)
					}
					twinDemand := foldAs(fold, r.buckets[twin])
					got := recordedRejected(twinDemand)
					t.Logf("%s steps, twin at %+v: predicted %d (%d to %d), recorded %d", fold, r.kind.settings[twin],
						res.Predicted.Rejected, res.Predicted.Low, res.Predicted.High, got)
					if att := attempts(twinDemand); att != res.Attempts {
						t.Errorf("the twin met %d attempts, today's limiter %d", att, res.Attempts)
					}
					if lo, hi := widen(res.Predicted); got < lo || got > hi {
						t.Errorf("%s steps: the twin at %+v recorded %d rejections, outside the band %d to %d (within 2 %%: %d to %d)",
							fold, r.kind.settings[twin], got, res.Predicted.Low, res.Predicted.High, lo, hi)
					}
				}
			}
		})
	}
}

// widen is the prediction's band, widened by the 2 % (or one rejection)
// the replay is held to at today's settings.
func widen(p Prediction) (lo, hi int64) {
	return int64(math.Floor(float64(p.Low) * 0.98)), int64(math.Ceil(float64(p.High)*1.02)) + 1
}

// checkToday holds the replay of demand at lim's own settings to what it
// recorded: within 2 %, or one rejection.
func checkToday(t *testing.T, fold string, lim Limiter, demand Series) {
	t.Helper()
	res, err := Replay(Request{Limiter: lim, Proposed: lim.Current, Demand: demand})
	if err != nil {
		t.Fatal(err)
	}
	even := lim
	even.Current = Settings{} // not known: no fit, attempts spread evenly
	plain, err := Fit(even, demand, Series{})
	if err != nil {
		t.Fatal(err)
	}
	spread, err := plain.Replay(lim.Current, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Check
	t.Logf("%s at %+v, %s steps: %d attempts, recorded %d rejections, replayed %d (%+.2f %%); spread evenly %d",
		lim.Kind, lim.Current, fold, res.Attempts, c.Recorded, c.Replayed, c.ErrorPct, spread.Predicted.Rejected)
	if c.Recorded != res.Actual.Rejected || c.Replayed != res.Predicted.Rejected || c.Recorded < 30 {
		t.Fatalf("check %+v beside %+v: want the recorded rejections (30 or more) and the prediction at today's settings", c, res)
	}
	if d := c.Replayed - c.Recorded; !c.Trusted() && d*d > 1 {
		t.Errorf("%s steps: replayed %d rejections at today's settings, recorded %d: %+.2f %%, want within 2 %%",
			fold, c.Replayed, c.Recorded, c.ErrorPct)
	}
}

// foldAs is the demand of buckets as 200 ms steps or as the history's 10 s.
func foldAs(fold string, buckets map[int64]inspect.Counts) Series {
	first, counts := consecutive(buckets)
	if fold == "10 s" {
		return HistorySeries(first, counts, 10_000)
	}
	return BucketSeries(first, counts)
}

// consecutive lays buckets out from the first to the last, empty between.
func consecutive(buckets map[int64]inspect.Counts) (int64, []inspect.Counts) {
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

func recordedRejected(s Series) (n int64) {
	for _, p := range s.Points {
		n += p.Rejected
	}
	return n
}

func attempts(s Series) (n int64) {
	for _, p := range s.Points {
		n += p.Acquired + p.Rejected
	}
	return n
}

// tryFunc is one attempt on a limiter.
type tryFunc func(context.Context) (store.Result, error)

// redissonSetup configures a Redisson limiter kept as mode's Redisson keeps it.
func redissonSetup(mode store.RedissonMode) func(*testing.T, *store.Client, string, Settings) tryFunc {
	return func(t *testing.T, app *store.Client, name string, s Settings) tryFunc {
		l := app.NewRedissonLimiter(name, &store.LimiterOptions{Mode: mode})
		if _, err := l.TrySetRate(t.Context(), store.RateOverall, s.Rate, time.Duration(s.IntervalMS)*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		return func(ctx context.Context) (store.Result, error) { return l.TryAcquire(ctx, 1) }
	}
}

// drivePaced configures k's three limiters under prefix, makes
// pacedDemand's attempts on each (the driver stalled as stalls says, see
// drive), and returns their stats buckets and the console's view of
// today's limiter.
func drivePaced(t *testing.T, prefix string, k pacedKind, stalls map[int]time.Duration) ([3]map[int64]inspect.Counts, *inspect.LimiterInfo) {
	rdb := redistest.Client(t)
	app := store.New(rdb, &store.Options{NoRegistry: true})
	var names [3]string
	var tries [3]tryFunc
	var opts inspect.Options
	for i, s := range k.settings {
		names[i] = prefix + []string{"today", "lower", "higher"}[i]
		tries[i] = k.setup(t, app, names[i], s)
		if k.kind == inspect.KindCounter {
			opts.Patterns.Counters = append(opts.Patterns.Counters,
				inspect.CounterRule{Pattern: names[i], Limit: s.Rate, Window: time.Duration(s.IntervalMS) * time.Millisecond})
		}
	}
	// The console's view is read right after the first attempt, while
	// the key is sure to exist: a counter's expires with its window.
	var info *inspect.LimiterInfo
	buckets := drive(t, rdb, names[:], stalls, func(ctx context.Context) error {
		for _, try := range tries {
			if _, err := try(ctx); err != nil {
				return err
			}
		}
		return nil
	}, func() {
		var err error
		if info, err = inspect.New(rdb, &opts).GetLimiter(t.Context(), names[0]); err != nil {
			t.Error(err)
		}
	})
	return [3]map[int64]inspect.Counts(buckets), info
}

// drive makes pacedDemand's attempts, spread evenly over each second of
// Redis time from the next whole second, calls first right after the
// first, and returns each name's stats buckets (bucket -> counts), which
// must hold every attempt made. The stats hash keeps only its newest
// buckets, so it is read every 500 ms while the attempts go on, and a
// bucket's counts are the largest read (they only grow). An attempt the
// driver cannot make before its share of the second ends is not made: a
// stalled driver leaves a gap, which the replay fits as it fits any
// demand that was not even. stalls stalls it on purpose, as a loaded
// machine does: for stalls[i] from the middle of second i.
func drive(t *testing.T, rdb *redis.Client, names []string, stalls map[int]time.Duration, try func(context.Context) error, first func()) [3]map[int64]inspect.Counts {
	ctx := t.Context()
	redisNow := redistest.NowMS(t, rdb)
	// Local time minus Redis time: a round trip's worth on one host.
	skew := time.Now().UnixMilli() - redisNow
	start := (redisNow/1000 + 1) * 1000

	var mu sync.Mutex
	var buckets [3]map[int64]inspect.Counts
	read := func() {
		for i, name := range names {
			fields, err := rdb.HGetAll(ctx, redistest.StatsKey(name)).Result()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			if buckets[i] == nil {
				buckets[i] = map[int64]inspect.Counts{}
			}
			for b, c := range inspect.ReadStatsRing(fields) {
				old := buckets[i][b]
				buckets[i][b] = inspect.Counts{Acquired: max(old.Acquired, c.Acquired), Rejected: max(old.Rejected, c.Rejected), Errors: max(old.Errors, c.Errors)}
			}
			mu.Unlock()
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
	var sent int64
	for i, n := range pacedDemand {
		for j := range n {
			if j == n/2 && stalls[i] > 0 {
				time.Sleep(stalls[i])
			}
			slot := time.UnixMilli(start + int64(i)*1000 + (2*j+1)*1000/(2*n) + skew)
			time.Sleep(time.Until(slot))
			if time.Since(slot) >= time.Second/time.Duration(2*n) {
				continue
			}
			if err := try(ctx); err != nil {
				t.Error(err)
				return buckets
			}
			if sent++; sent == 1 {
				first()
			}
		}
	}
	read()
	mu.Lock()
	defer mu.Unlock()
	for i := range names {
		var recorded inspect.Counts
		for _, c := range buckets[i] {
			recorded = recorded.Add(c)
		}
		if recorded.Acquired+recorded.Rejected != sent || recorded.Errors != 0 {
			t.Errorf("%s's stats hold %+v, %d attempts were made", names[i], recorded, sent)
		}
	}
	return buckets
}
