package store

import (
	"context"
	"fmt"
	"time"
)

// Access counters in seed 004's layout: a string per limited client (an IP,
// a user) INCRemented per hit and EXPIREd on the first hit of a window;
// hits above the limit are rejected (and still counted). The console
// (store/inspect) finds them by configured pattern, shows their count and
// remaining window, and can reset one.

var (
	counterHitScript = newScript("counter_hit")
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
	c.reg.announceAs(name, AnnounceCounter)
	return &Counter{c: c, name: name, limit: limit, window: window}
}

// Name is the counter's key.
func (k *Counter) Name() string { return k.name }

// TryAcquire counts n hits (seed 004 counts 1) and says whether the window
// still admits them; rejected hits are counted too, as in seed 004. The
// Result's Count is the hits in this window, these included; Remaining the
// hits left; ResetAfter (and, when rejected, RetryAfter) the time until
// the window ends. The outcome is counted in the stats ring. n above the
// limit can never succeed: a *ValidationError, nothing counted.
func (k *Counter) TryAcquire(ctx context.Context, n int64) (Result, error) {
	if err := validateName(k.name); err != nil {
		return Result{}, err
	}
	if k.limit < 1 {
		return Result{}, invalid("limit", "must be at least 1, got %d", k.limit)
	}
	if k.window < time.Millisecond {
		return Result{}, invalid("window", "must be at least 1ms, got %v", k.window)
	}
	if n < 1 || n > k.limit {
		return Result{}, invalid("permits", "must be between 1 and the limit %d, got %d", k.limit, n)
	}
	res, err := k.c.runScript(ctx, counterHitScript, []string{k.name, StatsKey(k.name)},
		k.window.Milliseconds(), k.limit, n).Int64Slice()
	if err != nil {
		return Result{}, fmt.Errorf("store: counter %q: %w", k.name, bucketRedisErr(err))
	}
	if len(res) != 3 {
		return Result{}, fmt.Errorf("store: counter %q: reply of %d elements, want 3", k.name, len(res))
	}
	out := Result{Allowed: res[0] == 1, Permits: n, Count: res[1], Remaining: max(0, k.limit-res[1]),
		ResetAfter: time.Duration(res[2]) * time.Millisecond}
	if !out.Allowed {
		out.RetryAfter = out.ResetAfter
	}
	return out, nil
}

// Acquire counts n hits once a window admits them, waiting as long as ctx
// allows: after a rejection it waits for the window to end and tries again.
// Every rejected attempt is counted in the window it was made in, as seed
// 004 counts them. When ctx ends first, or its deadline comes before the
// window does, the error matches ErrRateLimited and ctx's error.
func (k *Counter) Acquire(ctx context.Context, n int64) (Result, error) {
	return acquireLoop(ctx, func(ctx context.Context) (Result, error) { return k.TryAcquire(ctx, n) })
}
