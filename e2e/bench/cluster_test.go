package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// The sampler tick and the unlock event latency on one node beside a
// 3-master Cluster (per-master pipelines; on the Cluster, releases go out
// as PUBLISH and SPUBLISH and the console hears both and keeps one). Case
// 10 of the report (report_cluster_test.go) measures the same with its
// per-node cost; these are the quick version:
//
//	go test -run '^$' -bench 'Topology' -benchtime 200x ./e2e/bench/

// topologies returns a client per topology, each closed when b ends.
func topologies(b *testing.B) []struct {
	name string
	rdb  redis.UniversalClient
} {
	single := redistest.NewClient(b, redistest.Shared(b))
	c := redistest.StartCluster(b, nil)
	return []struct {
		name string
		rdb  redis.UniversalClient
	}{{"single", single}, {"cluster", redistest.NewClusterClient(b, c)}}
}

// topoBuckets and topoLocks are what a sampler tick reads in case 10.
const topoBuckets, topoLocks = 300, 100

// makeTopoObjects makes topoBuckets token buckets and topoLocks held locks
// (one-minute lease, no watchdog) under prefix.
func makeTopoObjects(ctx context.Context, rdb redis.UniversalClient, prefix string) (locks, lims []string, err error) {
	app := store.New(rdb, nil)
	defer app.Close() // its heartbeat would count in the sampler's commands
	for i := range topoBuckets {
		name := fmt.Sprintf("%srl:%d", prefix, i)
		if err := app.NewTokenBucket(name, nil).TrySetRate(ctx, store.TokenBucketConfig{Capacity: 1000, IntervalMS: 1, Initial: 1000}); err != nil {
			return nil, nil, err
		}
		lims = append(lims, name)
	}
	for i := range topoLocks {
		name := fmt.Sprintf("%slock:%d", prefix, i)
		if err := app.NewLock(name, &store.LockOptions{Lease: time.Minute, NoWatchdog: true}).TryLock(ctx); err != nil {
			return nil, nil, err
		}
		locks = append(locks, name)
	}
	return locks, lims, nil
}

// deleteTopoObjects removes what makeTopoObjects made.
func deleteTopoObjects(ctx context.Context, rdb redis.UniversalClient, names []string) {
	for _, n := range names {
		rdb.Del(ctx, n, redistest.StatsKey(n))
	}
}

// BenchmarkSampleTopology is one sampler read (Inspector.Sample) of 300
// token buckets and 100 held locks.
func BenchmarkSampleTopology(b *testing.B) {
	ctx := b.Context()
	for _, tp := range topologies(b) {
		b.Run(tp.name, func(b *testing.B) {
			locks, lims, err := makeTopoObjects(ctx, tp.rdb, fmt.Sprintf("bench:topo:%s:", tp.name))
			b.Cleanup(func() { deleteTopoObjects(context.WithoutCancel(ctx), tp.rdb, append(locks, lims...)) })
			if err != nil {
				b.Fatal(err)
			}
			in := inspect.New(tp.rdb, nil)
			b.ResetTimer()
			for range b.N {
				if _, err := in.Sample(ctx, locks, lims); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// unlockEventLatencies takes and releases the lock name n times and
// returns, for each release, the time from the store's Unlock call to the
// console's event stream delivering its unlock event (the release's round
// trip included).
func unlockEventLatencies(ctx context.Context, rdb redis.UniversalClient, name string, n int) ([]time.Duration, error) {
	app := store.New(rdb, nil)
	defer app.Close()
	s, err := inspect.New(rdb, nil).SubscribeEvents(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := s.Watch(ctx, []inspect.LockInfo{{Name: name, Kind: inspect.KindReentrant, Channel: redistest.UnlockChannel(name)}}); err != nil {
		return nil, err
	}
	l := app.NewLock(name, &store.LockOptions{NoWatchdog: true})
	lat := make([]time.Duration, 0, n)
	for range n {
		if err := l.TryLock(ctx); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := l.Unlock(ctx); err != nil {
			return nil, err
		}
		select {
		case ev := <-s.Events():
			if ev.Name != name {
				return nil, fmt.Errorf("event for %q, want %q", ev.Name, name)
			}
		case <-time.After(5 * time.Second):
			return nil, errors.New("no unlock event within 5 s")
		}
		lat = append(lat, time.Since(t0))
	}
	if d := s.Dropped(); d > 0 {
		return nil, fmt.Errorf("%d events dropped", d)
	}
	return lat, nil
}

// BenchmarkEventLatencyTopology is the time from a store Unlock call to the
// console's event stream delivering its unlock event.
func BenchmarkEventLatencyTopology(b *testing.B) {
	ctx := b.Context()
	for _, tp := range topologies(b) {
		b.Run(tp.name, func(b *testing.B) {
			b.ResetTimer()
			lat, err := unlockEventLatencies(ctx, tp.rdb, "bench:topo:event:"+tp.name, b.N)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}
