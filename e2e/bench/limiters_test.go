package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/lockwarden/lockwarden/store"
	"github.com/redis/go-redis/v9"
)

// A limiter as an application uses it: set up a limit of perSec on key,
// then decide once per call.
type limiterPeer struct {
	name  string
	setup func(ctx context.Context, rdb *countingClient, key string, capacity int64, perSec float64) (func(context.Context) (bool, error), error)
}

var limiterPeers = []limiterPeer{
	{"lockwarden", func(ctx context.Context, rdb *countingClient, key string, capacity int64, perSec float64) (func(context.Context) (bool, error), error) {
		// One store.Client per application instance, as for the locks:
		// its calls from many goroutines are batched together.
		b := rdb.store().NewTokenBucket(key, nil)
		err := b.TrySetRate(ctx, store.TokenBucketConfig{Capacity: capacity, IntervalMS: 1000 / perSec, Initial: capacity})
		return func(ctx context.Context) (bool, error) {
			res, err := b.TryAcquire(ctx, 1)
			return res.Allowed, err
		}, err
	}},
	{"redis_rate", func(_ context.Context, rdb *countingClient, key string, capacity int64, perSec float64) (func(context.Context) (bool, error), error) {
		l := redis_rate.NewLimiter(rdb.Client)
		// GCRA with the same sustained rate and burst.
		limit := redis_rate.Limit{Rate: int(perSec), Burst: int(capacity), Period: time.Second}
		return func(ctx context.Context) (bool, error) {
			res, err := l.Allow(ctx, key, limit)
			if err != nil {
				return false, err
			}
			return res.Allowed > 0, nil
		}, nil
	}},
}

// seed001Peer runs seed 001's own script (the test fixture restating it),
// with the client's clock, as seed 001's client does.
func seed001Peer() limiterPeer {
	src, err := os.ReadFile("../../store/testdata/ratelimit_client.lua")
	if err != nil {
		panic(err)
	}
	script := redis.NewScript(string(src))
	return limiterPeer{"seed 001 script", func(ctx context.Context, rdb *countingClient, key string, capacity int64, perSec float64) (func(context.Context) (bool, error), error) {
		now := strconv.FormatInt(time.Now().UnixMilli(), 10)
		interval := strconv.FormatFloat(1000/perSec, 'f', -1, 64)
		if err := script.Run(ctx, rdb, []string{key}, "init", now, capacity, capacity, interval, "bench").Err(); err != nil {
			return nil, err
		}
		return func(ctx context.Context) (bool, error) {
			now := strconv.FormatInt(time.Now().UnixMilli(), 10)
			n, err := script.Run(ctx, rdb, []string{key}, "acquire", now, 1).Int64()
			return n == 1, err
		}, nil
	}}
}

// decisions (case 3): limiter decisions per second over nkeys keys, conc
// goroutines, a limit of 1,000/s per key that is really enforced (most
// decisions at one key are rejections).
func decisions(ctx context.Context, e *env, p limiterPeer, nkeys, conc int, d time.Duration) (float64, error) {
	rdb := e.client(conc)
	defer rdb.Close()
	prefix := e.prefix("c3")
	setupAt := time.Now()
	allow := make([]func(context.Context) (bool, error), nkeys)
	for k := range allow {
		f, err := p.setup(ctx, rdb, fmt.Sprintf("%s%d", prefix, k), 1000, 1000)
		if err != nil {
			return 0, err
		}
		allow[k] = f
	}
	var admitted atomic.Int64
	counter := make([]int, conc)
	rate, err := runFor(ctx, conc, d, func(ctx context.Context, g int) error {
		counter[g]++
		ok, err := allow[(g*7919+counter[g])%nkeys](ctx)
		if ok {
			admitted.Add(1)
		}
		return err
	})
	if err == nil && rate > 0 {
		// The limit must hold: at most the burst plus the refill per key.
		limit := float64(nkeys) * (1000 + 1000*time.Since(setupAt).Seconds() + 1)
		if got := float64(admitted.Load()); got > limit {
			err = fmt.Errorf("%s admitted %v, above its limit %v", p.name, got, limit)
		}
	}
	return rate, err
}

// accuracyResult is one run of case 4.
type accuracyResult struct {
	mean, min, max float64 // admitted per rolling 1 s window, steady state
	errPct         float64 // (mean - 500) / 500 in %
}

// arrivals is how case 4's workers space their requests.
type arrivals int

const (
	// inPhase: every worker ticks every 30 ms from the same start, so the
	// 20 requests arrive as one burst every 30 ms.
	inPhase arrivals = iota
	// seedLoop is seed 001's own test loop: sleep 30 ms, then acquire. The
	// round trip and the sleep's overshoot add to every period, so workers
	// drift apart and requests arrive spread out, ~1.5 ms apart on average.
	seedLoop
)

func (a arrivals) String() string {
	if a == seedLoop {
		return "seed's loop (sleep 30 ms, then acquire: workers drift apart)"
	}
	return "in phase (a 30 ms ticker per worker, same start: bursts of 20)"
}

func (a arrivals) short() string {
	if a == seedLoop {
		return "seed's loop"
	}
	return "in phase"
}

// accuracy (case 4), seed 001's test: a 500/s bucket (500 permits, 2 ms
// interval, starting full), 20 workers acquiring every 30 ms (~667/s
// offered) for d; admitted counted per 200 ms bucket by the moment of the
// decision, summed over a 1 s window stepping by 200 ms. The first 4 s are
// not steady state: the full initial bucket drains at the excess 167/s
// for about 3 s.
func accuracy(ctx context.Context, e *env, p limiterPeer, d time.Duration, how arrivals) (accuracyResult, error) {
	rdb := e.client(20)
	defer rdb.Close()
	allow, err := p.setup(ctx, rdb, e.prefix("c4")+"bucket", 500, 500)
	if err != nil {
		return accuracyResult{}, err
	}
	nb := int(d / (200 * time.Millisecond))
	buckets := make([]atomic.Int64, nb+1)
	start := time.Now()
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(30 * time.Millisecond)
			defer tick.Stop()
			for { // bounded by d
				if how == seedLoop {
					time.Sleep(30 * time.Millisecond)
				} else {
					<-tick.C
				}
				if time.Since(start) >= d {
					return
				}
				ok, err := allow(ctx)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if ok {
					if i := int(time.Since(start) / (200 * time.Millisecond)); i < len(buckets) {
						buckets[i].Add(1)
					}
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return accuracyResult{}, err
	}
	var windows []float64
	for end := 25; end <= nb; end++ { // windows starting at 4 s
		var sum int64
		for i := end - 5; i < end; i++ {
			sum += buckets[i].Load()
		}
		windows = append(windows, float64(sum))
	}
	if len(windows) == 0 {
		return accuracyResult{}, fmt.Errorf("run of %v too short for a steady state", d)
	}
	r := accuracyResult{min: math.Inf(1)}
	for _, w := range windows {
		r.mean += w
		r.min = math.Min(r.min, w)
		r.max = math.Max(r.max, w)
	}
	r.mean /= float64(len(windows))
	r.errPct = (r.mean - 500) / 5
	return r, nil
}
