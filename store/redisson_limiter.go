package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/redis/go-redis/v9"
)

// Redisson's RRateLimiter for Go applications, in its wire layout (seeds 000
// and 002), so Java services using Redisson and Go services using store
// share one limiter: config hash <name> (rate, interval, type), value key
// {<name>}:value (per client {<name>}:value:<client-id>) and, for the
// sliding window of Redisson 3.34+, grants zset {<name>}:permits. Unlike
// Redisson's own scripts ours count every attempt in the stats ring, so the
// console sees our clients' rejections (and only theirs).

var (
	redissonAcquireScript    = redis.NewScript(luascripts.Source("redisson_limiter_acquire"))
	redissonTrySetRateScript = redis.NewScript(luascripts.Source("redisson_limiter_try_set_rate"))
	redissonSetRateScript    = redis.NewScript(luascripts.Source("redisson_limiter_set_rate"))
)

// RateType is Redisson's RateType: one window for everyone, or one per client.
type RateType int

const (
	RateOverall   RateType = 0 // OVERALL: all clients share the rate
	RatePerClient RateType = 1 // PER_CLIENT: each client instance gets the rate
)

// RedissonLimiterOptions tunes a handle. A nil pointer means the defaults.
type RedissonLimiterOptions struct {
	// FixedWindow selects Redisson 3.10's algorithm (value created with PX
	// interval, refilled all at once); the default is 3.34's sliding window.
	// Use the one the Java services sharing the limiter run.
	FixedWindow bool
	// ClientID names this client in per-client keys; default Client.ID(),
	// like Redisson's connection manager id.
	ClientID string
}

// RedissonLimiter is a handle on the Redisson rate limiter stored at name.
type RedissonLimiter struct {
	c         *Client
	name      string
	clientID  string
	algorithm string
}

// RedissonLimiter returns a handle on the limiter whose config hash is name.
func (c *Client) RedissonLimiter(name string, opts *RedissonLimiterOptions) *RedissonLimiter {
	l := &RedissonLimiter{c: c, name: name, clientID: c.ID(), algorithm: "sliding"}
	if opts != nil {
		if opts.FixedWindow {
			l.algorithm = "fixed"
		}
		if opts.ClientID != "" {
			l.clientID = opts.ClientID
		}
	}
	return l
}

// Name is the config hash's key.
func (l *RedissonLimiter) Name() string { return l.name }

func (l *RedissonLimiter) keys() []string {
	return []string{l.name, RedissonValueKey(l.name, ""), RedissonValueKey(l.name, l.clientID),
		RedissonPermitsKey(l.name, ""), RedissonPermitsKey(l.name, l.clientID), StatsKey(l.name)}
}

// TrySetRate configures the limiter unless it is configured already
// (Redisson's trySetRate); it reports whether this call configured it.
// ErrWrongKind when the key holds something other than a hash.
func (l *RedissonLimiter) TrySetRate(ctx context.Context, typ RateType, rate int64, interval time.Duration) (bool, error) {
	if err := l.validate(typ, rate, interval); err != nil {
		return false, err
	}
	code, err := runScript(ctx, l.c.rdb, redissonTrySetRateScript, []string{l.name},
		rate, interval.Milliseconds(), int(typ), 0).Int64()
	if err != nil {
		return false, bucketRedisErr(err)
	}
	if code == -5 {
		return false, ErrWrongKind
	}
	return code == 1, nil
}

// SetRate configures the limiter, replacing any configuration, and restarts
// this client's window (Redisson's setRate). With keepState the permits
// granted in the running window stay granted instead (Redisson's
// updateRate with keepState).
func (l *RedissonLimiter) SetRate(ctx context.Context, typ RateType, rate int64, interval time.Duration, keepState bool) error {
	if err := l.validate(typ, rate, interval); err != nil {
		return err
	}
	value, grants := RedissonValueKey(l.name, ""), RedissonPermitsKey(l.name, "")
	if typ == RatePerClient {
		value, grants = RedissonValueKey(l.name, l.clientID), RedissonPermitsKey(l.name, l.clientID)
	}
	alg := AlgorithmSlidingWindow
	if l.algorithm == "fixed" {
		alg = AlgorithmFixedWindow
	}
	return runSetRate(ctx, l.c.rdb, []string{l.name, value, grants}, rate, interval.Milliseconds(),
		strconv.Itoa(int(typ)), "", keepState, alg, true)
}

func (l *RedissonLimiter) validate(typ RateType, rate int64, interval time.Duration) error {
	if err := validateName(l.name); err != nil {
		return err
	}
	if typ != RateOverall && typ != RatePerClient {
		return invalid("type", "must be 0 (overall) or 1 (per client), got %d", int(typ))
	}
	return validateRedissonRate(rate, float64(interval.Milliseconds()))
}

// RedissonResult is one acquire decision.
type RedissonResult struct {
	Allowed bool
	// Available is the value left in the window after the decision.
	Available int64
	// RetryAfter is, when not Allowed, Redisson's delay before trying again.
	RetryAfter time.Duration
}

// TryAcquire tries once to take n permits (Redisson's tryAcquire(n)). A
// rejection is Allowed false, not an error. ErrNotConfigured when no
// limiter is configured at the name; n above the rate is a
// *ValidationError (the attempt counts as an error in the stats).
func (l *RedissonLimiter) TryAcquire(ctx context.Context, n int64) (RedissonResult, error) {
	if err := validateName(l.name); err != nil {
		return RedissonResult{}, err
	}
	if n < 1 || n > math.MaxUint32 {
		return RedissonResult{}, invalid("permits", "must be between 1 and %d, got %d", int64(math.MaxUint32), n)
	}
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand never fails on Linux
	res, err := runScript(ctx, l.c.rdb, redissonAcquireScript, l.keys(), n, l.algorithm, string(id[:])).Int64Slice()
	if err != nil {
		return RedissonResult{}, bucketRedisErr(err)
	}
	if len(res) != 3 {
		return RedissonResult{}, fmt.Errorf("store: redisson acquire: reply of %d elements, want 3", len(res))
	}
	out := RedissonResult{Allowed: res[0] == 1, Available: res[2],
		RetryAfter: time.Duration(res[1]) * time.Millisecond}
	switch res[0] {
	case 1, -1:
		return out, nil
	case 0:
		return out, ErrNotConfigured
	case -4:
		return out, invalid("permits", "%d is more than the limiter's rate", n)
	}
	return out, ErrWrongKind
}

// TryAcquireWait takes n permits, waiting up to timeout (Redisson's
// tryAcquire(n, timeout)): after a rejection it sleeps the returned delay
// and tries again, and gives up at once when that delay ends after the
// timeout. It returns whether the permits were taken; ctx ending first is
// ctx's error.
func (l *RedissonLimiter) TryAcquireWait(ctx context.Context, n int64, timeout time.Duration) (bool, error) {
	return l.acquireLoop(ctx, n, time.Now().Add(timeout), true)
}

// Acquire takes n permits, waiting as long as it takes (Redisson's
// acquire(n)); only ctx bounds the wait.
func (l *RedissonLimiter) Acquire(ctx context.Context, n int64) error {
	_, err := l.acquireLoop(ctx, n, time.Time{}, false)
	return err
}

func (l *RedissonLimiter) acquireLoop(ctx context.Context, n int64, deadline time.Time, bounded bool) (bool, error) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		res, err := l.TryAcquire(ctx, n)
		if err != nil || res.Allowed {
			return res.Allowed, err
		}
		wait := max(res.RetryAfter, time.Millisecond)
		if bounded && time.Until(deadline) < wait {
			return false, nil
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-timer.C:
		}
	}
}
