package inspect

import (
	"strconv"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// A per-client Redisson limiter with more clients than one call edits: a
// console edit reaches every client's window, not only the first 100, and
// "keep" counts each window's grants against the rate it replaced.
func TestModifyRedissonPerClientReachesEveryClient(t *testing.T) {
	const clients = 250 // three batches of maxPairsPerEdit
	ctx, c, rdb, p := kindSetup(t)
	name := p + "per-client"
	rdb.HSet(ctx, name, "rate", 10, "interval", 60000, "type", 1)
	pipe := rdb.Pipeline()
	for i := range clients {
		// Redisson's fixed window per client: 6 of 10 permits taken.
		pipe.Set(ctx, wire.RedissonValueKey(name, "client-"+strconv.Itoa(i)), 4, time.Minute)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}

	if _, err := c.ModifyLimiterWith(ctx, name, LimiterEdit{Rate: 20, IntervalMS: 60000, KeepState: true}); err != nil {
		t.Fatal(err)
	}
	for i := range clients {
		key := wire.RedissonValueKey(name, "client-"+strconv.Itoa(i))
		if v, err := rdb.Get(ctx, key).Int64(); err != nil || v != 14 {
			t.Fatalf("%s after keep-state edit to 20 = %d, %v; want 14 (6 taken of the old 10)", key, v, err)
		}
	}
	if r := rdb.HGet(ctx, name, "rate").Val(); r != "20" {
		t.Fatalf("config rate = %s, want 20", r)
	}

	if _, err := c.ModifyLimiterWith(ctx, name, LimiterEdit{Rate: 5, IntervalMS: 60000}); err != nil {
		t.Fatal(err)
	}
	for i := range clients {
		key := wire.RedissonValueKey(name, "client-"+strconv.Itoa(i))
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Fatalf("%s survived a reset edit", key)
		}
	}

}
