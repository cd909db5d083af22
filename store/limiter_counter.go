package store

import (
	"context"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Access counters: a string per limited client (an IP, a user)
// INCRemented per hit and EXPIREd on the first hit of a window, as
// hand-written INCR+EXPIRE limiters keep them;
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
	err    error // invalid input; every call returns it before any I/O
}

// NewCounter returns a handle on the counter at name admitting opts.Limit
// hits per opts.Window, both required: the layout keeps no configuration
// in Redis, so the rule is the handle's. Invalid input (a nil opts too) is
// reported by the handle's first call, with nothing sent to Redis.
func (c *Client) NewCounter(name string, opts *LimiterOptions) *Counter {
	c.reg.announceAs(name, wire.AnnounceCounter)
	k := &Counter{c: c, name: name}
	if opts != nil {
		k.limit, k.window = opts.Limit, opts.Window
	}
	switch {
	case validateName(name) != nil:
		k.err = validateName(name)
	case k.limit < 1:
		k.err = invalid("limit", "must be at least 1, got %d", k.limit)
	case k.window < time.Millisecond:
		k.err = invalid("window", "must be at least 1ms, got %v", k.window)
	}
	return k
}

// Name is the counter's key.
func (k *Counter) Name() string { return k.name }

// TryAcquire counts n hits and says whether the window still admits them;
// rejected hits are counted too, as INCR-first limiters count them. The
// Result's Count is the hits in this window, these included; Remaining the
// hits left; ResetAfter (and, when rejected, RetryAfter) the time until
// the window ends. The outcome is counted in the stats ring. n above the
// limit can never succeed: a *ValidationError, nothing counted.
func (k *Counter) TryAcquire(ctx context.Context, n int64) (Result, error) {
	if k.err != nil {
		return Result{}, k.err
	}
	if n < 1 || n > k.limit {
		return Result{}, invalid("permits", "must be between 1 and the limit %d, got %d", k.limit, n)
	}
	res, err := k.c.runScript(ctx, counterHitScript, []string{k.name, wire.StatsKey(k.name)},
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
// Every rejected attempt is counted in the window it was made in. When ctx ends first, or its deadline comes before the
// window does, the error matches ErrRateLimited and ctx's error.
func (k *Counter) Acquire(ctx context.Context, n int64) (Result, error) {
	return acquireLoop(ctx, func(ctx context.Context) (Result, error) { return k.TryAcquire(ctx, n) })
}
