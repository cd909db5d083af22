package store

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// A token bucket decision stays cheap inside Redis: a rejection runs TIME,
// HMGET of the bucket and the stats HINCRBY; an admission adds one HSET of
// the bucket. Each new 200 ms bucket's first count adds the stats hash's
// PEXPIRE and HLEN (lib/record.lua). Any other command, or any of these
// run more often, fails the test. A private server, so no other test moves
// its counters.
func TestTokenBucketDecisionCommands(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.NewClient(t, redistest.StartT(t))
	c := New(rdb, &Options{NoRegistry: true})
	cases := []struct {
		name string
		cfg  TokenBucketConfig
		want map[string]int64 // per decision
	}{
		// Empty and an hour per permit: every attempt is rejected.
		{"rejection", TokenBucketConfig{Capacity: 10, IntervalMS: 3600e3},
			map[string]int64{"time": 1, "hmget": 1, "hincrby": 1}},
		// Full and far larger than the calls: every attempt is admitted.
		{"admission", TokenBucketConfig{Capacity: 1 << 40, IntervalMS: 1, Initial: 1 << 40},
			map[string]int64{"time": 1, "hmget": 1, "hincrby": 1, "hset": 1}},
	}
	for _, tc := range cases {
		b := c.NewTokenBucket("cost:"+tc.name, nil)
		if err := b.Init(ctx, tc.cfg); err != nil {
			t.Fatal(err)
		}
		allowed := tc.name == "admission"
		decide := func() {
			res, err := b.TryAcquire(ctx, 1)
			if err != nil || res.Allowed != allowed {
				t.Fatalf("%s: TryAcquire = %+v, %v", tc.name, res, err)
			}
		}
		decide() // the first loads the script
		const calls = 200
		before := redistest.CommandCalls(t, rdb)
		start := time.Now()
		for range calls {
			decide()
		}
		buckets := int64(time.Since(start)/(wire.BucketMS*time.Millisecond)) + 2
		got := diffCalls(before, redistest.CommandCalls(t, rdb))
		t.Logf("%s, inside the script: %s", tc.name, perPair(got, calls))
		var inside, per int64
		for cmd, n := range got {
			if notInScripts[cmd] {
				continue
			}
			inside += n
			limit := tc.want[cmd] * calls
			if cmd == "pexpire" || cmd == "hlen" {
				limit += buckets
			}
			if n > limit {
				t.Errorf("%s: %d %s for %d decisions, want at most %d", tc.name, n, cmd, calls, limit)
			}
		}
		for _, n := range tc.want {
			per += n
		}
		if limit := per*calls + 2*buckets; inside > limit {
			t.Errorf("%s: %d commands inside the script for %d decisions (%.2f each), want at most %d",
				tc.name, inside, calls, float64(inside)/calls, limit)
		}
		if got["evalsha"] != calls {
			t.Errorf("%s: %d EVALSHA for %d decisions, want one each", tc.name, got["evalsha"], calls)
		}
	}
}
