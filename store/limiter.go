package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// LimiterOptions tunes a handle of any limiter kind: NewTokenBucket,
// NewRedissonLimiter and NewCounter all take one. A field a kind has no
// use for is ignored by it; a token bucket uses none, its configuration
// being in Redis (TrySetRate, SetRate).
type LimiterOptions struct {
	// Limit is the most hits one window of a Counter admits; at least 1.
	// Required for a Counter, whose layout keeps no configuration in Redis.
	Limit int64
	// Window is how long a Counter's window lasts from its first hit (the
	// key's EXPIRE); at least 1ms. Required for a Counter.
	Window time.Duration
	// Mode is the Redisson version a RedissonLimiter emulates; the zero
	// value is RedissonSliding (3.17.0 and later). See RedissonMode.
	Mode RedissonMode
	// ClientID names this client in a RedissonLimiter's per-client keys;
	// default Client.ID(), like Redisson's connection manager id.
	ClientID string
}

// CounterOptions sets a Counter's limit.
//
// Deprecated: use LimiterOptions, which it is.
type CounterOptions = LimiterOptions

// RedissonLimiterOptions tunes a RedissonLimiter.
//
// Deprecated: use LimiterOptions, which it is.
type RedissonLimiterOptions = LimiterOptions

// TokenBucketOptions tunes a TokenBucket, which uses none of its fields.
//
// Deprecated: use LimiterOptions, which it is.
type TokenBucketOptions = LimiterOptions

// Result is one limiter decision, the same for every limiter kind (token
// bucket, Redisson limiter, access counter), in the manner of
// go-redis/redis_rate: was it allowed, what is left, when to come back.
type Result struct {
	// Allowed reports whether the permits were taken. It is false when no
	// limiter is configured at the name too (the error is then
	// ErrNotConfigured): whether that means "go ahead" is the caller's call.
	Allowed bool
	// Permits is the number asked for.
	Permits int64
	// Remaining is what is left after the decision: whole permits in a
	// token bucket, the window's value of a Redisson limiter, hits left in
	// a counter's window (never below 0).
	Remaining int64
	// RetryAfter is, when not Allowed, how long until Permits could be
	// there if nobody else takes them first; 0 when Allowed.
	RetryAfter time.Duration
	// ResetAfter is how long until the window ends (counter, fixed-window
	// Redisson limiter); 0 where the kind has no window end.
	ResetAfter time.Duration

	// Token bucket only: the script's code (BucketSuccess,
	// BucketAcquireFail, BucketNoLimit), the Redis time of the decision to
	// the millisecond, and the bucket's configuration (zero for
	// BucketNoLimit).
	Code  BucketCode
	At    time.Time
	Limit Limit

	// Counter only: hits counted in this window, this one included
	// (rejected hits count too).
	Count int64
}

// String reads like "allowed 2, remaining 3" or "rejected 5, remaining 1,
// retry after 200ms".
func (r Result) String() string {
	var b strings.Builder
	if r.Allowed {
		fmt.Fprintf(&b, "allowed %d, remaining %d", r.Permits, r.Remaining)
	} else {
		fmt.Fprintf(&b, "rejected %d, remaining %d", r.Permits, r.Remaining)
		if r.RetryAfter > 0 {
			fmt.Fprintf(&b, ", retry after %s", r.RetryAfter)
		}
	}
	return b.String()
}

// minRetryWait keeps a retry loop from spinning when permits are due within
// microseconds.
const minRetryWait = 100 * time.Microsecond

// acquireLoop is every limiter's Acquire: try, and after a rejection sleep
// the RetryAfter the limiter computed and try again, until allowed, an
// error, or ctx ends. Other clients may take the permits first, so a wait
// is a chance, not a reservation. When ctx's deadline comes before the
// next retry it gives up at once instead of sleeping in vain.
func acquireLoop(ctx context.Context, try func(context.Context) (Result, error)) (Result, error) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		res, err := try(ctx)
		if err != nil || res.Allowed {
			return res, err
		}
		wait := max(res.RetryAfter, minRetryWait)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return res, fmt.Errorf("%w: %w", ErrRateLimited, context.DeadlineExceeded)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("%w: %w", ErrRateLimited, ctx.Err())
		case <-timer.C:
		}
	}
}
