package store

import (
	"context"
	"testing"

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
	rdb.Set(ctx, RedissonValueKey(name, ""), 7, 0)
	t.Cleanup(func() { rdb.Del(ctx, name, RedissonValueKey(name, "")) })
	c := New(rdb, nil)
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
		rdb.ScriptFlush(ctx)
		if cl, err := c.RedissonClients(ctx, name); err != nil {
			t.Fatalf("round %d: RedissonClients after SCRIPT FLUSH: %v (%v)", round, err, cl)
		}
	}
}
