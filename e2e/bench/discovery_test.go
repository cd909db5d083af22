package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// Case 8: discovery in a big keyspace, on a redis-server of its own (it
// holds a million keys, and DEBUG POPULATE needs the debug command).

// discoveryKeys is the keyspace: other keys are strings (DEBUG POPULATE)
// and small application hashes (hashes; 0 means 10 % of other), which
// discovery must read and reject, among the locks (Redisson layout) and
// token buckets.
type discoveryKeys struct{ other, hashes, locks, limiters int }

func (k discoveryKeys) appHashes() int {
	if k.hashes > 0 {
		return min(k.hashes, k.other)
	}
	return k.other / 10
}

type discoveryResult struct {
	seconds      float64
	idleP99      float64 // PING p99 (ms) with nothing else running
	p50, p99     float64 // PING latency (ms) while Discover runs
	max          float64
	redisCPUPct  float64 // Redis CPU during the pass, % of one core
	locks, limit int     // what the pass listed
	probes       int
}

// discoveryServer starts the server and fills it.
func discoveryServer(ctx context.Context, t testing.TB, k discoveryKeys) (*redis.Client, error) {
	srv := redistest.StartT(t, "--enable-debug-command", "local")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 20, ReadTimeout: 3 * time.Minute})
	t.Cleanup(func() { rdb.Close() })
	strs := k.other - k.appHashes()
	if err := rdb.Do(ctx, "DEBUG", "POPULATE", strs, "app:str", 16).Err(); err != nil {
		return nil, fmt.Errorf("DEBUG POPULATE: %w", err)
	}
	holder := store.New(rdb, &store.Options{NoRegistry: true}).ID() + ":1"
	fill := func(n int, write func(p redis.Pipeliner, i int)) error {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for lo := g * 1000; lo < n; lo += 8 * 1000 {
					p := rdb.Pipeline()
					for i := lo; i < min(lo+1000, n); i++ {
						write(p, i)
					}
					if _, err := p.Exec(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	err := fill(k.appHashes(), func(p redis.Pipeliner, i int) {
		p.HSet(ctx, fmt.Sprintf("app:user:%d", i), "name", "someone", "plan", "pro", "visits", i)
	})
	if err == nil {
		err = fill(k.locks, func(p redis.Pipeliner, i int) {
			name := fmt.Sprintf("orders:lock:%d", i)
			p.HSet(ctx, name, holder, 1)
			p.PExpire(ctx, name, 10*time.Minute)
		})
	}
	if err == nil {
		// Token buckets in seed 001's layout, as its init writes them.
		err = fill(k.limiters, func(p redis.Pipeliner, i int) {
			p.HSet(ctx, fmt.Sprintf("api:limit:%d", i), "last_mill_second", time.Now().UnixMilli(),
				"stored_permits", 100, "max_permits", 100, "interval", 10, "app", "bench")
		})
	}
	if err != nil {
		return nil, err
	}
	want := int64(k.other + k.locks + k.limiters)
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != want {
		return nil, fmt.Errorf("keyspace holds %d keys, want %d (%v)", n, want, err)
	}
	return rdb, nil
}

// pingProbe sends PING about every millisecond on a connection of its own
// until stop is called, which returns the latencies.
func pingProbe(ctx context.Context, rdb *redis.Client) (stop func() []time.Duration) {
	done := make(chan struct{})
	out := make(chan []time.Duration, 1)
	go func() {
		var lat []time.Duration
		defer func() { out <- lat }()
		for len(lat) < 1_000_000 { // bounded; stop ends it first
			select {
			case <-done:
				return
			default:
			}
			t := time.Now()
			if rdb.Ping(ctx).Err() != nil {
				return
			}
			lat = append(lat, time.Since(t))
			time.Sleep(time.Millisecond)
		}
	}()
	return func() []time.Duration { close(done); return <-out }
}

// discoverOnce times one discovery pass, as the console's first tick runs
// it, with a probe client measuring what other clients see meanwhile.
func discoverOnce(ctx context.Context, rdb *redis.Client, k discoveryKeys, idle time.Duration) (discoveryResult, error) {
	var r discoveryResult
	probeClient := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, PoolSize: 1})
	defer probeClient.Close()
	stop := pingProbe(ctx, probeClient)
	sleepCtx(ctx, idle)
	r.idleP99 = percentileMS(stop(), 99)

	st := inspect.New(redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, ReadTimeout: time.Minute}), nil)
	defer st.Redis().Close()
	u0, err := readRedisUsage(ctx, rdb)
	if err != nil {
		return r, err
	}
	stop = pingProbe(ctx, probeClient)
	t0 := time.Now()
	d, err := walk.Discover(ctx, st, "*")
	r.seconds = time.Since(t0).Seconds()
	lat := stop()
	if err != nil {
		return r, err
	}
	u1, err := readRedisUsage(ctx, rdb)
	if err != nil {
		return r, err
	}
	r.redisCPUPct = 100 * (u1.cpu - u0.cpu) / r.seconds
	r.p50, r.p99, r.max, r.probes = percentileMS(lat, 50), percentileMS(lat, 99), percentileMS(lat, 100), len(lat)
	r.locks, r.limit = len(d.Locks), len(d.Limiters)
	if r.locks != k.locks || r.limit != k.limiters {
		return r, fmt.Errorf("discovery listed %d locks and %d limiters, want %d and %d", r.locks, r.limit, k.locks, k.limiters)
	}
	return r, nil
}
