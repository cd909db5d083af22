package history

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

// BenchmarkRecorderSample is the Recorder's share of the history per tick
// at 1,000 limiters with attempts and 10,000 held locks: a snapshot turned
// into a sample (the history's own goroutine takes it from there:
// BenchmarkObserveTick).
const benchUUID = "0f8a2c1e-7b3d-4e9f-a6c5-123456789abc"

func BenchmarkRecorderSample(b *testing.B) {
	sn := &live.Snapshot{RedisUp: true, Stats: map[string]inspect.Summary{},
		Registry: &inspect.Registry{Clients: map[string]inspect.ClientInfo{benchUUID: {App: "orders", Host: "h1", PID: 7}}}}
	for i := range 1000 {
		name := fmt.Sprintf("rl:%d", i)
		sn.Limiters = append(sn.Limiters, inspect.LimiterInfo{Name: name, Kind: inspect.KindTokenBucket})
		sn.Stats[name] = inspect.Summary{Window: inspect.Counts{Acquired: 50, Rejected: 5}}
	}
	for i := range 10000 {
		sn.Locks = append(sn.Locks, inspect.LockInfo{Name: fmt.Sprintf("lock:%d", i), Kind: inspect.KindReentrant,
			PTTL: 30 * time.Second, Holders: []inspect.Holder{{ID: benchUUID + ":" + fmt.Sprint(i), Count: 1}}})
	}
	f := NewRecorder(nil)
	at := time.Now().UnixMilli() / inspect.BucketMS * inspect.BucketMS
	for b.Loop() {
		at += inspect.BucketMS
		sn.At = at
		if _, ok := f.sample(sn); !ok {
			b.Fatal("no sample")
		}
	}
}
