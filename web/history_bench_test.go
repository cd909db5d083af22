package web

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// BenchmarkHistoryFeed is the sampler goroutine's share of the history
// per tick at the scale: 1,000 limiters with attempts and 10,000
// held locks turned into a history sample (the history's own goroutine
// takes it from there: web/history's BenchmarkObserveTick).
func BenchmarkHistoryFeed(b *testing.B) {
	sn := &live.Snapshot{RedisUp: true, Stats: map[string]inspect.Summary{},
		Registry: &inspect.Registry{Clients: map[string]inspect.ClientInfo{testUUID: {App: "orders", Host: "h1", PID: 7}}}}
	for i := range 1000 {
		name := fmt.Sprintf("rl:%d", i)
		sn.Limiters = append(sn.Limiters, inspect.LimiterInfo{Name: name, Kind: inspect.KindTokenBucket})
		sn.Stats[name] = inspect.Summary{Window: inspect.Counts{Acquired: 50, Rejected: 5}}
	}
	for i := range 10000 {
		sn.Locks = append(sn.Locks, inspect.LockInfo{Name: fmt.Sprintf("lock:%d", i), Kind: inspect.KindReentrant,
			PTTL: 30 * time.Second, Holders: []inspect.Holder{{ID: holderID(fmt.Sprint(i)), Count: 1}}})
	}
	f := &historyFeed{}
	at := time.Now().UnixMilli() / inspect.BucketMS * inspect.BucketMS
	for b.Loop() {
		at += inspect.BucketMS
		sn.At = at
		if _, ok := f.sample(sn); !ok {
			b.Fatal("no sample")
		}
	}
}
