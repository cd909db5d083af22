package inspect

import (
	"context"
	"testing"

	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// The sampler reads Redisson windows with EVALSHA; after SCRIPT FLUSH (or a
// restarted Redis) it must load the script and still return the window,
// not a limiter with its state missing.
func TestSampleReloadsWindowScriptAfterFlush(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	name := redistest.Prefix(t) + "rl"
	rdb.HSet(ctx, name, "rate", 10, "interval", 60000, "type", 0)
	rdb.Set(ctx, wire.RedissonValueKey(name, ""), 7, 0)
	t.Cleanup(func() { rdb.Del(ctx, name, wire.RedissonValueKey(name, "")) })
	c := New(redistest.UniversalFor(t, rdb), nil)
	for round := 0; round < 2; round++ {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		s, err := c.Sample(ctx, nil, []string{name})
		if err != nil {
			t.Fatalf("round %d: Sample: %v", round, err)
		}
		if len(s.Limiters) != 1 || s.Limiters[0].Available != 7 {
			t.Fatalf("round %d: Sample after SCRIPT FLUSH = %+v, want the limiter with 7 available", round, s.Limiters)
		}
		info, err := c.GetLimiter(ctx, name)
		if err != nil || info.Available != 7 {
			t.Fatalf("round %d: GetLimiter after SCRIPT FLUSH = %+v, %v", round, info, err)
		}
	}
}

// A token bucket's Redisson window read is skipped once it is known to be a
// bucket; if the name turns into a Redisson limiter, the next sample reads
// its window again.
func TestSampleSkipsWindowReadForKnownBuckets(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	name := redistest.Prefix(t) + "b"
	t.Cleanup(func() { rdb.Del(ctx, name, wire.RedissonValueKey(name, "")) })
	now := redistest.NowMS(t, rdb)
	inspecttest.Bucket(t, rdb, name, now, 3, 10, "1000")
	c := New(redistest.UniversalFor(t, rdb), nil)
	if err := c.LoadScripts(ctx); err != nil {
		t.Fatal(err)
	}
	// The server holding the bucket counts its EVALSHA (on a Cluster,
	// the other masters count other tests').
	node := redistest.NodeFor(t, rdb, name)
	evalsha := func() int64 { return redistest.CommandCalls(t, node)["evalsha"] }
	if _, err := c.Sample(ctx, nil, []string{name}); err != nil { // learns it is a bucket
		t.Fatal(err)
	}
	before := evalsha()
	for i := 0; i < 3; i++ {
		s, err := c.Sample(ctx, nil, []string{name})
		if err != nil || len(s.Limiters) != 1 || s.Limiters[0].Kind != KindTokenBucket {
			t.Fatalf("Sample = %+v, %v", s, err)
		}
	}
	if got := evalsha() - before; got != 0 {
		t.Errorf("3 samples of a known token bucket ran %d EVALSHA, want 0", got)
	}

	rdb.Del(ctx, name)
	rdb.HSet(ctx, name, "rate", 10, "interval", 60000, "type", 0)
	rdb.Set(ctx, wire.RedissonValueKey(name, ""), 4, 0)
	s, err := c.Sample(ctx, nil, []string{name})
	if err != nil || len(s.Limiters) != 1 || s.Limiters[0].Kind != KindRedissonLimiter || !s.Limiters[0].AvailableUnknown {
		t.Fatalf("first sample after the kind changed = %+v, %v; want a Redisson limiter with availability unknown", s, err)
	}
	s, err = c.Sample(ctx, nil, []string{name})
	if err != nil || len(s.Limiters) != 1 || s.Limiters[0].Available != 4 || s.Limiters[0].AvailableUnknown {
		t.Fatalf("second sample = %+v, %v; want the window read again (4 available)", s, err)
	}
}
