package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// The sampler tick and the unlock event latency on one node beside a
// 3-master Cluster (per-master pipelines; on the Cluster, releases go out
// as PUBLISH and SPUBLISH and the console hears both and keeps one):
//
//	go test -run '^$' -bench 'Topology' -benchtime 200x ./store/bench/

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

// BenchmarkSampleTopology is one sampler read (Inspector.Sample) of 300
// token buckets and 100 held locks.
func BenchmarkSampleTopology(b *testing.B) {
	ctx := b.Context()
	for _, tp := range topologies(b) {
		b.Run(tp.name, func(b *testing.B) {
			app := store.New(tp.rdb, nil)
			prefix := fmt.Sprintf("bench:topo:%s:", tp.name)
			var locks, lims []string
			for i := range 300 {
				name := fmt.Sprintf("%srl:%d", prefix, i)
				tb := app.TokenBucket(name)
				if err := tb.Init(ctx, store.TokenBucketConfig{Capacity: 1000, IntervalMS: 1, Initial: 1000}); err != nil {
					b.Fatal(err)
				}
				lims = append(lims, name)
			}
			for i := range 100 {
				name := fmt.Sprintf("%slock:%d", prefix, i)
				if err := app.NewLock(name, &store.LockOptions{Lease: time.Minute, NoWatchdog: true}).TryLock(ctx); err != nil {
					b.Fatal(err)
				}
				locks = append(locks, name)
			}
			b.Cleanup(func() {
				for _, n := range append(locks, lims...) {
					tp.rdb.Del(context.WithoutCancel(ctx), n)
				}
			})
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

// BenchmarkEventLatencyTopology is the time from a store Unlock call to the
// console's event stream delivering its unlock event (the release's round
// trip included).
func BenchmarkEventLatencyTopology(b *testing.B) {
	ctx := b.Context()
	for _, tp := range topologies(b) {
		b.Run(tp.name, func(b *testing.B) {
			app := store.New(tp.rdb, nil)
			name := "bench:topo:event:" + tp.name
			in := inspect.New(tp.rdb, nil)
			s, err := in.SubscribeEvents(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Watch(ctx, []inspect.LockInfo{{Name: name, Kind: inspect.KindReentrant, Channel: store.UnlockChannel(name)}}); err != nil {
				b.Fatal(err)
			}
			l := app.NewLock(name, &store.LockOptions{NoWatchdog: true})
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				if err := l.TryLock(ctx); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
				select {
				case ev := <-s.Events():
					if ev.Name != name {
						b.Fatalf("event for %q", ev.Name)
					}
				case <-time.After(5 * time.Second):
					b.Fatal("no event within 5 s")
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			if d := s.Dropped(); d > 0 {
				b.Fatalf("%d events dropped", d)
			}
		})
	}
}
