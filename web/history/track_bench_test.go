package history

import (
	"fmt"
	"testing"
	"time"
)

// The tracker's cost per console tick (200 ms) at 1,000 limiters and
// 10,000 locks, with every limiter counting and one lock in a hundred
// changing holder: what every replica spends to follow the samples.
func BenchmarkObserveTick(b *testing.B) {
	opt, err := (*Options)(nil).resolve()
	if err != nil {
		b.Fatal(err)
	}
	t := newTracker(opt)
	lims := make([]LimiterSample, 1000)
	for i := range lims {
		lims[i] = LimiterSample{Name: fmt.Sprintf("rl:%04d", i), Acquired: 3, Rejected: 1}
	}
	locks := make([]LockSample, 10000)
	holders := make([][2]Holder, len(locks))
	for i := range locks {
		holders[i] = [2]Holder{{ID: fmt.Sprintf("h%d-a", i), App: "app"}, {ID: fmt.Sprintf("h%d-b", i), App: "app"}}
		locks[i] = LockSample{Name: fmt.Sprintf("lock:%05d", i), PTTL: 30 * time.Second, Holders: holders[i][:1]}
	}
	start := time.UnixMilli(1_800_000_000_000)
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		for j := n % 100; j < len(locks); j += 100 {
			k := (n / 100) % 2
			locks[j].Holders = holders[j][k : k+1]
		}
		t.observe(Sample{At: start.Add(time.Duration(n) * 200 * time.Millisecond), Limiters: lims, Locks: locks})
	}
}
