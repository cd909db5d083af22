package store

import (
	"context"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/redis/go-redis/v9"
)

// Access counters in seed 004's layout: a string per limited client (an IP,
// a user) INCRemented per hit and EXPIREd on the first hit of a window;
// hits above the limit are rejected (and still counted). The console lists
// them by configured pattern (ObjectPatterns.Counters) with their count and
// remaining window, and can reset one (ResetCounter).

var (
	counterHitScript   = redis.NewScript(luascripts.Source("counter_hit"))
	counterResetScript = redis.NewScript(luascripts.Source("counter_reset"))
)

// Counter is a handle on one access counter.
type Counter struct {
	c      *Client
	name   string
	limit  int64
	window time.Duration
}

// Counter returns a handle on the counter at name admitting limit hits per
// window (seed 004's ip_limit(ip, limit_time, limit_count)).
func (c *Client) Counter(name string, limit int64, window time.Duration) *Counter {
	return &Counter{c: c, name: name, limit: limit, window: window}
}

// Hit is one decision.
type Hit struct {
	Allowed bool
	Count   int64         // hits in this window, this one included
	ResetIn time.Duration // until the window ends
}

// Hit counts one hit and says whether it is within the limit. The outcome
// is counted in the stats ring.
func (k *Counter) Hit(ctx context.Context) (Hit, error) {
	if err := validateName(k.name); err != nil {
		return Hit{}, err
	}
	if k.limit < 1 {
		return Hit{}, invalid("limit", "must be at least 1, got %d", k.limit)
	}
	if k.window < time.Millisecond {
		return Hit{}, invalid("window", "must be at least 1ms, got %v", k.window)
	}
	res, err := runScript(ctx, k.c.rdb, counterHitScript, []string{k.name, StatsKey(k.name)},
		k.window.Milliseconds(), k.limit).Int64Slice()
	if err != nil {
		return Hit{}, fmt.Errorf("store: counter %q: %w", k.name, bucketRedisErr(err))
	}
	if len(res) != 3 {
		return Hit{}, fmt.Errorf("store: counter %q: reply of %d elements, want 3", k.name, len(res))
	}
	return Hit{Allowed: res[0] == 1, Count: res[1], ResetIn: time.Duration(res[2]) * time.Millisecond}, nil
}
