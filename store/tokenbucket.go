package store

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Token buckets in the "ratelimit:<app>" hash layout: last_mill_second,
// stored_permits, max_permits, interval (ms per permit) and app. Buckets
// written by the single-script clients of that layout (restated in
// testdata/ratelimit_client.lua) work with these scripts and the other way
// round; ours differ in taking time from Redis TIME and in keeping the
// unused part of an interval on refill, so the admitted rate is the
// configured one.

var (
	tokenBucketInit    = newScript("tokenbucket_init")
	tokenBucketModify  = newScript("tokenbucket_modify")
	tokenBucketDelete  = newScript("tokenbucket_delete")
	tokenBucketAcquire = newScript("tokenbucket_acquire")
)

// BucketCode is a token bucket script's return code. 1, 0, -1, -2 and -500
// are the layout's own; -3, -4 and -5 are lockwarden's additions.
type BucketCode int64

const (
	BucketSuccess     BucketCode = 1    // done (acquire: permits taken)
	BucketNoLimit     BucketCode = 0    // acquire on a key with no bucket: no limit
	BucketAcquireFail BucketCode = -1   // not enough permits now
	BucketModifyError BucketCode = -2   // modify of a bucket that does not exist
	BucketCorrupt     BucketCode = -3   // a field of the bucket is unusable
	BucketBadArgument BucketCode = -4   // an argument is out of range (e.g. permits > capacity)
	BucketWrongKind   BucketCode = -5   // the key holds something that is not a bucket
	BucketUnsupported BucketCode = -500 // unknown method (the layout's one-script clients)
)

func (c BucketCode) String() string {
	switch c {
	case BucketSuccess:
		return "success"
	case BucketNoLimit:
		return "no limit"
	case BucketAcquireFail:
		return "acquire failed"
	case BucketModifyError:
		return "modify error"
	case BucketCorrupt:
		return "corrupt"
	case BucketBadArgument:
		return "bad argument"
	case BucketWrongKind:
		return "wrong kind"
	case BucketUnsupported:
		return "unsupported"
	}
	return "code " + strconv.FormatInt(int64(c), 10)
}

// bucketCodeErr is the one place script codes become errors. A rejection
// (-1) is an answer, not an error. Argument codes come back as
// *ValidationError for field.
func bucketCodeErr(code BucketCode, field string) error {
	switch code {
	case BucketSuccess, BucketAcquireFail:
		return nil
	case BucketNoLimit:
		return ErrNotConfigured
	case BucketModifyError:
		return ErrModify
	case BucketCorrupt:
		return ErrCorrupt
	case BucketBadArgument:
		return invalid(field, "rejected by the bucket script")
	case BucketWrongKind:
		return ErrWrongKind
	}
	return fmt.Errorf("store: token bucket script returned unknown code %d", int64(code))
}

// bucketRedisErr maps Redis errors that have a domain meaning.
func bucketRedisErr(err error) error {
	if isWrongType(err) {
		return fmt.Errorf("%w: %v", ErrWrongKind, err)
	}
	return err
}

// Bounds of a bucket's configuration. Lua numbers are doubles, so capacities
// stay below 2^53; intervals under a microsecond are below what TIME resolves.
const (
	MaxBucketCapacity = 1 << 53
	MinIntervalMS     = 0.001
)

// Limit is a token bucket's configuration: it holds at most Capacity permits
// and gains one every IntervalMS milliseconds.
type Limit struct {
	Capacity   int64   // max_permits
	IntervalMS float64 // interval: ms per permit, may be fractional
}

// Interval is IntervalMS as a Duration (rounded to the nanosecond).
func (l Limit) Interval() time.Duration {
	return time.Duration(math.Round(l.IntervalMS * float64(time.Millisecond)))
}

// PerSecond is the sustained admission rate.
func (l Limit) PerSecond() float64 {
	if l.IntervalMS <= 0 {
		return 0
	}
	return 1000 / l.IntervalMS
}

// String reads like "500 per 1s (1 per 2ms)": a full bucket's worth and the
// time it takes to refill, then the pace of single permits.
func (l Limit) String() string {
	full := time.Duration(math.Round(float64(l.Capacity) * l.IntervalMS * float64(time.Millisecond)))
	return fmt.Sprintf("%d per %s (1 per %s)", l.Capacity, full, l.Interval())
}

// Validate reports, as a *ValidationError, why l is not a configuration a
// bucket accepts; nil when it is.
func (l Limit) Validate() error {
	if l.Capacity < 1 || l.Capacity > MaxBucketCapacity {
		return invalid("rate", "must be between 1 and %d, got %d", int64(MaxBucketCapacity), l.Capacity)
	}
	if math.IsNaN(l.IntervalMS) || math.IsInf(l.IntervalMS, 0) || l.IntervalMS < MinIntervalMS {
		return invalid("interval_ms", "must be a number of milliseconds of at least %g, got %g", MinIntervalMS, l.IntervalMS)
	}
	return nil
}

// bucketFormatMS writes milliseconds without a trailing ".0" and without loss.
func bucketFormatMS(ms float64) string { return strconv.FormatFloat(ms, 'f', -1, 64) }

// TokenBucketConfig is what Init writes.
type TokenBucketConfig struct {
	// Capacity is max_permits: the most permits the bucket holds (burst).
	Capacity int64
	// IntervalMS is the time to gain one permit, in ms; fractions allowed
	// (2 means 500/s, 0.5 means 2000/s).
	IntervalMS float64
	// Initial is stored_permits at creation, 0..Capacity. The zero value
	// starts the bucket empty.
	Initial int64
	// App is the non-empty marker stored in "app". Default: the bucket's
	// name without a "ratelimit:" prefix, as the layout's clients write it.
	App string
}

// Limit returns the capacity and interval.
func (cfg TokenBucketConfig) Limit() Limit {
	return Limit{Capacity: cfg.Capacity, IntervalMS: cfg.IntervalMS}
}

func (cfg TokenBucketConfig) getApp(name string) string {
	if cfg.App != "" {
		return cfg.App
	}
	if app := strings.TrimPrefix(name, "ratelimit:"); app != "" {
		return app
	}
	return name
}

// TokenBucket is a handle on one token bucket.
type TokenBucket struct {
	c       *Client
	name    string
	nameErr error    // validateName(name), checked by every call before any I/O
	keys    []string // the bucket and its stats
	one     preparedCall
}

// TokenBucketOptions tunes a token bucket handle. It has no fields: a
// bucket's configuration lives in Redis (Init, Modify), not in the handle.
// It is there so that every kind's constructor takes a name and options;
// pass nil.
type TokenBucketOptions struct{}

// NewTokenBucket returns a handle on the bucket stored at name (the full
// key, e.g. "ratelimit:test" for buckets of the layout's other clients).
// Keep the handle: it prepares the acquire call once.
func (c *Client) NewTokenBucket(name string, opts *TokenBucketOptions) *TokenBucket {
	c.reg.announce(name)
	b := &TokenBucket{c: c, name: name, nameErr: validateName(name), keys: []string{name, wire.StatsKey(name)}}
	b.one = tokenBucketAcquire.prepare(b.keys, "1")
	return b
}

// Name is the bucket's key.
func (b *TokenBucket) Name() string { return b.name }

// Init creates the bucket with cfg. When a bucket is already configured at
// the name it is left exactly as it is (every instance of an application
// may call Init at start-up); change it with Modify.
// ErrWrongKind when the key holds something else, which is never overwritten.
func (b *TokenBucket) Init(ctx context.Context, cfg TokenBucketConfig) error {
	if err := validateName(b.name); err != nil {
		return err
	}
	if err := cfg.Limit().Validate(); err != nil {
		return err
	}
	if cfg.Initial < 0 || cfg.Initial > cfg.Capacity {
		return invalid("initial", "must be between 0 and the capacity %d, got %d", cfg.Capacity, cfg.Initial)
	}
	code, err := b.c.runScript(ctx, tokenBucketInit, []string{b.name},
		cfg.Initial, cfg.Capacity, bucketFormatMS(cfg.IntervalMS), cfg.getApp(b.name)).Int64()
	if err != nil {
		return bucketRedisErr(err)
	}
	return bucketCodeErr(BucketCode(code), "rate")
}

// Modify sets a new capacity and interval. The refill up to now is credited
// at the old rate first and stored permits are clamped to the new capacity,
// in one script. ErrModify when there is no bucket at the name (nothing is
// created), ErrWrongKind when the key holds something else.
func (b *TokenBucket) Modify(ctx context.Context, capacity int64, intervalMS float64) error {
	if err := validateName(b.name); err != nil {
		return err
	}
	return b.c.modifyBucket(ctx, b.name, Limit{Capacity: capacity, IntervalMS: intervalMS})
}

// modifyBucket validates l and runs the modify script.
func (c *Client) modifyBucket(ctx context.Context, name string, l Limit) error {
	if err := l.Validate(); err != nil {
		return err
	}
	code, err := c.runScript(ctx, tokenBucketModify, []string{name},
		l.Capacity, bucketFormatMS(l.IntervalMS)).Int64()
	if err != nil {
		return bucketRedisErr(err)
	}
	return bucketCodeErr(BucketCode(code), "rate")
}

// Delete removes the bucket and its stats. Deleting a missing bucket is not
// an error; ErrWrongKind when the key is not a bucket, which
// is then left alone.
func (b *TokenBucket) Delete(ctx context.Context) error {
	if err := validateName(b.name); err != nil {
		return err
	}
	code, err := b.c.runScript(ctx, tokenBucketDelete, b.keys).Int64()
	if err != nil {
		return bucketRedisErr(err)
	}
	if code == 0 {
		return nil
	}
	return bucketCodeErr(BucketCode(code), "name")
}

// TryAcquire tries once to take n permits.
//
// A rejection is not an error: Allowed is false and RetryAfter says when to
// come back. When no bucket is configured at the name the Result has Code
// BucketNoLimit and the error is ErrNotConfigured, and nothing is written to
// Redis. n above the capacity is a *ValidationError (Field "permits") found
// by the script, the attempt counting as an error in the stats; a corrupt
// bucket is ErrCorrupt.
func (b *TokenBucket) TryAcquire(ctx context.Context, n int64) (Result, error) {
	if b.nameErr != nil {
		return Result{}, b.nameErr
	}
	if n < 1 || n > MaxBucketCapacity {
		return Result{}, invalid("permits", "must be between 1 and %d, got %d", int64(MaxBucketCapacity), n)
	}
	var cmd *redis.Cmd
	if n == 1 {
		cmd = b.c.call(ctx, &b.one)
	} else {
		cmd = b.c.runScript(ctx, tokenBucketAcquire, b.keys, n)
	}
	reply, err := cmd.Slice()
	if err != nil {
		return Result{}, bucketRedisErr(err)
	}
	res, err := parseAcquireReply(reply)
	if err != nil {
		return Result{}, err
	}
	res.Permits = n
	switch res.Code {
	case BucketSuccess, BucketAcquireFail, BucketNoLimit:
		return res, bucketCodeErr(res.Code, "permits")
	case BucketBadArgument:
		return res, invalid("permits", "must be between 1 and the capacity %d, got %d", res.Limit.Capacity, n)
	}
	return res, bucketCodeErr(res.Code, "permits")
}

// parseAcquireReply reads {code, remaining, retry_after_us, now_ms, max, interval}.
func parseAcquireReply(reply []any) (Result, error) {
	if len(reply) != 6 {
		return Result{}, fmt.Errorf("store: token bucket acquire: reply of %d elements, want 6", len(reply))
	}
	var ints [5]int64
	for i := range ints {
		v, ok := reply[i].(int64)
		if !ok {
			return Result{}, fmt.Errorf("store: token bucket acquire: element %d is %T, want integer", i, reply[i])
		}
		ints[i] = v
	}
	var interval float64
	switch v := reply[5].(type) {
	case int64:
		interval = float64(v)
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return Result{}, fmt.Errorf("store: token bucket acquire: interval %q: %w", v, err)
		}
		interval = f
	default:
		return Result{}, fmt.Errorf("store: token bucket acquire: interval is %T, want integer or string", reply[5])
	}
	code := BucketCode(ints[0])
	return Result{
		Code:       code,
		Allowed:    code == BucketSuccess,
		Remaining:  ints[1],
		RetryAfter: time.Duration(ints[2]) * time.Microsecond,
		At:         time.UnixMilli(ints[3]),
		Limit:      Limit{Capacity: ints[4], IntervalMS: interval},
	}, nil
}

// Acquire takes n permits, waiting as long as ctx allows: after a rejection
// it sleeps for the RetryAfter the script computed and tries again (see
// acquireLoop). When ctx ends first, or its deadline comes before the
// permits would, the error matches ErrRateLimited and ctx's error and the
// Result is the last rejection; TryAcquire's errors come back as they are.
func (b *TokenBucket) Acquire(ctx context.Context, n int64) (Result, error) {
	return acquireLoop(ctx, func(ctx context.Context) (Result, error) { return b.TryAcquire(ctx, n) })
}
