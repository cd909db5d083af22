package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// Case 5: what the console's sampler costs Redis. Applications' traffic
// keeps some stats rings busy; the console's share of Redis CPU is the
// difference between a window with the console running and one without it
// (same traffic, same length, back to back), and its commands and round
// trips are counted by the hook on its own client.

// samplerResult is one measured window with the console running.
type samplerResult struct {
	ticks        float64 // stats frames per second (one per sampler tick)
	roundTrips   float64 // pipelines + single calls, per tick
	pipes        float64 // pipelines per tick
	cmds         float64 // commands sent per tick (hook; the console runs no scripts)
	consoleCalls float64 // HGETALL+PTTL+SCAN executed per tick (commandstats)
	evals        float64 // EVAL per tick (commandstats; applications use EVALSHA)
	executed     float64 // all commands executed per tick, incl. inside scripts, over the traffic's
	pipeMS       float64 // mean time of one pipeline, as the console sees it
	redisCPUPct  float64 // console's share of one Redis core
	frameKB      float64 // size of one stats frame
}

// samplerRounds sets up nLim token buckets (traffic at about 1,000
// decisions/s on 100 of them) and measures, per round, a window of traffic
// alone, then the console sampling only (discovery once), then the console
// with its default 1 s rediscovery. It returns both console modes' results.
func samplerRounds(ctx context.Context, e *env, nLim, rounds int, w time.Duration) (sampleOnly, withDiscovery, noEval []samplerResult, err error) {
	admin := e.client(1)
	prefix := e.prefix("c5")
	defer deleteByPrefix(ctx, admin.Client, prefix)
	appClient := e.client(4)
	defer appClient.Close()
	app := appClient.store()
	bs, err := makeBuckets(ctx, app, prefix, nLim)
	if err != nil {
		return nil, nil, nil, err
	}
	busy := make([]*store.TokenBucket, 0, 100)
	for i := 0; i < len(bs) && len(busy) < 100; i += max(1, len(bs)/100) {
		busy = append(busy, bs[i])
	}
	stop := paced(ctx, 4, 1000, func(ctx context.Context, g, i int) error {
		_, err := busy[(g*7+i)%len(busy)].TryAcquire(ctx, 1)
		return err
	})
	defer stop()

	for r := 0; r < rounds; r++ {
		u0, err := readRedisUsage(ctx, admin.Client)
		if err != nil {
			return nil, nil, nil, err
		}
		t0 := time.Now()
		if !sleepCtx(ctx, w) {
			return nil, nil, nil, ctx.Err()
		}
		u1, err := readRedisUsage(ctx, admin.Client)
		if err != nil {
			return nil, nil, nil, err
		}
		base := redisRate{cpu: (u1.cpu - u0.cpu) / time.Since(t0).Seconds(), calls: float64(totalCalls(u1, u0)) / time.Since(t0).Seconds()}

		for _, every := range []time.Duration{time.Hour, 0} {
			res, err := samplerWindow(ctx, e.addr, admin.Client, prefix, every, w, base)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%d limiters: %w", nLim, err)
			}
			if every == 0 {
				withDiscovery = append(withDiscovery, res)
			} else {
				sampleOnly = append(sampleOnly, res)
			}
		}
		res, err := withoutEval(ctx, admin.Client, bs, w, base)
		if err != nil {
			return nil, nil, nil, err
		}
		noEval = append(noEval, res)
	}
	if _, err := stop(); err != nil {
		return nil, nil, nil, fmt.Errorf("traffic: %w", err)
	}
	return sampleOnly, withDiscovery, noEval, nil
}

// redisRate is Redis's work per second: CPU (cores) and commands executed.
type redisRate struct{ cpu, calls float64 }

// samplerWindow runs a console for one window of w after it has published
// two frames (so the first discovery is behind it). base is Redis's work
// without the console.
func samplerWindow(ctx context.Context, addr string, admin *redis.Client, prefix string, discoverEvery, w time.Duration, base redisRate) (samplerResult, error) {
	c, err := startConsole(ctx, addr, consoleOpts{match: prefix + "*", discoverEvery: discoverEvery})
	if err != nil {
		return samplerResult{}, err
	}
	defer c.close()
	fc, err := newFrameCounter(ctx, c.ws, nil)
	if err != nil {
		return samplerResult{}, err
	}
	defer fc.close()
	if err := fc.waitFrames(ctx, 2, 60*time.Second); err != nil {
		return samplerResult{}, err
	}
	h0, f0 := c.hook.snap(), fc.stats.Load()
	u0, err := readRedisUsage(ctx, admin)
	if err != nil {
		return samplerResult{}, err
	}
	t0 := time.Now()
	if !sleepCtx(ctx, w) {
		return samplerResult{}, ctx.Err()
	}
	u1, err := readRedisUsage(ctx, admin)
	if err != nil {
		return samplerResult{}, err
	}
	wall := time.Since(t0).Seconds()
	h := c.hook.snap().minus(h0)
	ticks := float64(fc.stats.Load() - f0)
	if ticks == 0 {
		return samplerResult{}, fmt.Errorf("no tick in %v", w)
	}
	r := samplerResult{
		ticks:        ticks / wall,
		roundTrips:   float64(h.pipes+h.calls) / ticks,
		pipes:        float64(h.pipes) / ticks,
		cmds:         float64(h.cmds) / ticks,
		consoleCalls: float64(u1.callsOf(u0, consoleOnly...)) / ticks,
		evals:        float64(u1.callsOf(u0, "eval")) / ticks,
		executed:     (float64(totalCalls(u1, u0))/wall - base.calls) * wall / ticks,
		redisCPUPct:  100 * ((u1.cpu-u0.cpu)/wall - base.cpu),
		frameKB:      float64(fc.bytes.Load()) / 1024,
	}
	if h.pipes > 0 {
		r.pipeMS = float64(h.pipeNanos) / float64(h.pipes) / 1e6
	}
	return r, nil
}

// sleepCtx sleeps for d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// withoutEval is the next idea measured by hand: every 200 ms one pipeline
// of what Sample reads for a token bucket (TIME, HGETALL of the bucket and
// of its stats ring) without the Redisson window script Sample also runs
// for every limiter. Only Redis's side is measured.
func withoutEval(ctx context.Context, admin *redis.Client, bs []*store.TokenBucket, w time.Duration, base redisRate) (samplerResult, error) {
	rdb := redis.NewClient(&redis.Options{Addr: admin.Options().Addr, ReadTimeout: 10 * time.Second})
	defer rdb.Close()
	u0, err := readRedisUsage(ctx, admin)
	if err != nil {
		return samplerResult{}, err
	}
	t0 := time.Now()
	ticks := 0
	var cmds int
	var pipeTime time.Duration
	for next := t0; time.Since(t0) < w; next = next.Add(200 * time.Millisecond) { // bounded by w
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		start := time.Now()
		p := rdb.Pipeline()
		p.Time(ctx)
		for _, b := range bs {
			p.HGetAll(ctx, b.Name())
			p.HGetAll(ctx, redistest.StatsKey(b.Name()))
		}
		cmds = p.Len()
		if _, err := p.Exec(ctx); err != nil {
			return samplerResult{}, err
		}
		pipeTime += time.Since(start)
		ticks++
	}
	u1, err := readRedisUsage(ctx, admin)
	if err != nil {
		return samplerResult{}, err
	}
	wall := time.Since(t0).Seconds()
	return samplerResult{
		ticks: float64(ticks) / wall, roundTrips: 1, pipes: 1, cmds: float64(cmds),
		consoleCalls: float64(u1.callsOf(u0, consoleOnly...)) / float64(ticks),
		executed:     (float64(totalCalls(u1, u0))/wall - base.calls) * wall / float64(ticks),
		pipeMS:       pipeTime.Seconds() * 1000 / float64(ticks),
		redisCPUPct:  100 * ((u1.cpu-u0.cpu)/wall - base.cpu),
	}, nil
}
