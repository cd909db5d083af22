package store

import (
	"context"
	"errors"
	"fmt"
)

// The console's view of limiters: read one, change its rate. Token buckets
// (seed 001) are the kind handled here; the key decides the kind by the
// fields it holds, never by its name.

// GetLimiter reads one limiter with the Redis time of the read, so Available
// includes the refill up to now. ErrNotFound when there is no key at name,
// ErrWrongKind when the key holds something that is not a limiter.
func (c *Client) GetLimiter(ctx context.Context, name string) (*LimiterInfo, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	pipe := c.rdb.Pipeline()
	fields := pipe.HGetAll(ctx, name)
	now := pipe.Time(ctx)
	_, _ = pipe.Exec(ctx) // each command's own error is checked below
	if err := fields.Err(); err != nil {
		return nil, bucketRedisErr(err)
	}
	if err := now.Err(); err != nil {
		return nil, err
	}
	if len(fields.Val()) == 0 {
		return nil, ErrNotFound
	}
	info, ok := parseTokenBucket(name, fields.Val(), now.Val().UnixMilli())
	if !ok {
		return nil, ErrWrongKind
	}
	return &info, nil
}

// ModifyLimiter gives the limiter at name a new rate and interval and returns
// its state afterwards. For a token bucket rate is the capacity (max_permits)
// and intervalMS the time per permit; time already elapsed is credited at
// the old rate (see luascripts/tokenbucket_modify.lua). Invalid input is a
// *ValidationError (Field "rate" or "interval_ms") and changes nothing.
// ErrNotFound when there is no limiter at name (the error also matches
// ErrModify); ErrWrongKind when the key holds something else.
func (c *Client) ModifyLimiter(ctx context.Context, name string, rate int64, intervalMS float64) (*LimiterInfo, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	err := c.modifyBucket(ctx, name, Limit{Capacity: rate, IntervalMS: intervalMS})
	if errors.Is(err, ErrModify) {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	return c.GetLimiter(ctx, name)
}
