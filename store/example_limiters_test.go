package store_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store"
)

// Every limiter kind speaks TryAcquire (one attempt) and Acquire (waits as
// long as ctx allows) and answers with a store.Result.
func ExampleTokenBucket() {
	ctx, c, p, done := exampleClient()
	defer done()

	b := c.NewTokenBucket(p+"ratelimit:api", nil)
	// 3 permits, one more a minute: nothing refills while the example runs.
	_ = b.TrySetRate(ctx, store.TokenBucketConfig{Capacity: 3, IntervalMS: 60000, Initial: 3})
	for range 2 {
		r, _ := b.TryAcquire(ctx, 1)
		fmt.Println(r.Allowed, r.Remaining)
	}
	r, _ := b.TryAcquire(ctx, 2)
	fmt.Println(r.Allowed, r.Remaining, r.RetryAfter > 59*time.Second)

	// Acquire would wait over a minute; a ctx deadline sooner makes it give
	// up at once.
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err := b.Acquire(short, 2)
	fmt.Println(errors.Is(err, store.ErrRateLimited), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// true 2
	// true 1
	// false 1 true
	// true true
}

// The Redisson limiter shares its state with Java services using Redisson's
// RRateLimiter; Mode says which Redisson version they run.
func ExampleRedissonLimiter() {
	ctx, c, p, done := exampleClient()
	defer done()

	mode, _ := store.RedissonModeFor("3.16.4")
	l := c.NewRedissonLimiter(p+"partner", &store.LimiterOptions{Mode: mode})
	configured, _ := l.TrySetRate(ctx, store.RateOverall, 2, time.Minute)
	fmt.Println(l.Mode(), configured)
	for range 3 {
		r, _ := l.TryAcquire(ctx, 1)
		fmt.Println(r.Allowed, r.Remaining)
	}
	// Output:
	// sliding window (Redisson 3.16.4) true
	// true 1
	// true 0
	// false 0
}

// The access counter (INCR, and EXPIRE on a window's first hit) answers
// like the other limiters, with the hits counted so far in Count.
func ExampleCounter() {
	ctx, c, p, done := exampleClient()
	defer done()

	k := c.NewCounter(p+"ip:10.0.0.7", &store.LimiterOptions{Limit: 2, Window: time.Minute})
	for range 3 {
		r, _ := k.TryAcquire(ctx, 1)
		fmt.Println(r.Allowed, r.Count, r.Remaining)
	}
	// Output:
	// true 1 1
	// true 2 0
	// false 3 0
}

// A Result prints as what was decided.
func ExampleResult_String() {
	fmt.Println(store.Result{Allowed: true, Permits: 2, Remaining: 3})
	fmt.Println(store.Result{Permits: 5, Remaining: 1, RetryAfter: 200 * time.Millisecond})
	// Output:
	// allowed 2, remaining 3
	// rejected 5, remaining 1, retry after 200ms
}
