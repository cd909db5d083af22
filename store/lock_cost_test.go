package store

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// The uncontended path stays cheap on the Redis side: a TryLock + Unlock of
// a free lock nobody waits for runs at most 12 commands inside the scripts
// (TIME, EXISTS, HSET, PEXPIRE, HINCRBY and the hold times' HSET, PEXPIRE;
// HGET, DEL, ZRANGE, PUBLISH and the hold times' DEL), plus
// a PEXPIRE of the stats hash once per 200 ms bucket. A private server, so
// no other test moves its counters.
func TestLockUncontendedCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb := redistest.NewClient(t, redistest.StartT(t))
	// Out of the client registry: its beats would count as script commands.
	l := New(rdb, &Options{NoRegistry: true}).NewLock("cost", nil)
	if err := l.TryLock(ctx); err != nil { // loads the scripts
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	const pairs = 200
	before := redistest.CommandCalls(t, rdb)
	start := time.Now()
	for i := 0; i < pairs; i++ {
		if err := l.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	buckets := int64(time.Since(start)/(wire.BucketMS*time.Millisecond)) + 2
	after := redistest.CommandCalls(t, rdb)
	var inside int64
	for cmd, n := range after {
		if cmd != "evalsha" && cmd != "info" {
			inside += n - before[cmd]
		}
	}
	if limit := 12*int64(pairs) + buckets; inside > limit {
		t.Errorf("%d commands inside the scripts for %d pairs (%.1f a pair), want at most %d", inside, pairs, float64(inside)/pairs, limit)
	}
	if got := after["evalsha"] - before["evalsha"]; got != 2*pairs {
		t.Errorf("%d EVALSHA for %d pairs, want one per call", got, pairs)
	}
}
