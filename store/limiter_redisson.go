package store

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Redisson's RRateLimiter for Go applications, in its wire layout, so Java services using Redisson and Go services using store
// share one limiter: config hash <name> (rate, interval, type), value key
// {<name>}:value (per client {<name>}:value:<client-id>) and, for the
// sliding window of Redisson 3.13.3 and later, grants zset
// {<name>}:permits[:<client-id>]. Unlike
// Redisson's own scripts ours count every attempt in the stats ring, so the
// console sees our clients' rejections (and only theirs).

var (
	redissonAcquireScript    = newScript("redisson_limiter_acquire")
	redissonTrySetRateScript = newScript("redisson_limiter_try_set_rate")
)

// RateType is Redisson's RateType: one window for everyone, or one per client.
type RateType int

const (
	RateOverall   RateType = 0 // OVERALL: all clients share the rate
	RatePerClient RateType = 1 // PER_CLIENT: each client instance gets the rate
)

// RedissonMode is the Redisson version (and so the algorithm and grant
// layout) a handle emulates. Use the mode of the Java services sharing the
// limiter: they and lockwarden then read each other's state.
//
//	mode                  Redisson          window   grant member (struct.pack)
//	RedissonSliding       3.17.0 and later  sliding  "Bc0I": id length byte, id, uint32 permits
//	RedissonSliding3164   3.16.4            sliding  "Lc0I": id length uint64, id, uint32 permits
//	RedissonSliding3133   3.13.3 to 3.16.3  sliding  "fI": float32 random, uint32 permits
//	RedissonFixed         before 3.13.3     fixed    none (value key expires after interval)
//
// Grants are read in every layout whatever the mode; the mode decides the layout of grants written and
// the algorithm. A fixed-window handle on a sliding-window limiter (or the
// other way round) disagrees with Redisson: Redisson's fixed window fails on
// a value key without expiry, and a sliding window never refills a value
// key nobody records grants for.
type RedissonMode int

const (
	RedissonSliding     RedissonMode = iota // Redisson 3.17.0 and later (the default)
	RedissonSliding3164                     // Redisson 3.16.4
	RedissonSliding3133                     // Redisson 3.13.3 to 3.16.3
	RedissonFixed                           // Redisson before 3.13.3
)

// RedissonModeFor is the mode of a Redisson version such as "3.16.4".
func RedissonModeFor(version string) (RedissonMode, error) {
	var major, minor, patch int
	if n, _ := fmt.Sscanf(version, "%d.%d.%d", &major, &minor, &patch); n < 2 || major < 1 {
		return 0, invalid("version", "want a Redisson version like 3.17.0, got %q", version)
	}
	v := major*1_000_000 + minor*1_000 + patch
	switch {
	case v >= 3_017_000:
		return RedissonSliding, nil
	case v >= 3_016_004:
		return RedissonSliding3164, nil
	case v >= 3_013_003:
		return RedissonSliding3133, nil
	}
	return RedissonFixed, nil
}

// memberFormat is the struct.pack format of grants the mode writes.
func (m RedissonMode) memberFormat() string {
	switch m {
	case RedissonSliding3164:
		return wire.RedissonPermitLc0I
	case RedissonSliding3133:
		return wire.RedissonPermitFI
	}
	return wire.RedissonPermitBc0I
}

func (m RedissonMode) String() string {
	switch m {
	case RedissonSliding:
		return "sliding window (Redisson 3.17.0+)"
	case RedissonSliding3164:
		return "sliding window (Redisson 3.16.4)"
	case RedissonSliding3133:
		return "sliding window (Redisson 3.13.3-3.16.3)"
	case RedissonFixed:
		return "fixed window (Redisson before 3.13.3)"
	}
	return "mode " + strconv.Itoa(int(m))
}

// RedissonLimiter is a handle on the Redisson rate limiter stored at name.
type RedissonLimiter struct {
	c        *Client
	name     string
	clientID string
	mode     RedissonMode
	err      error
}

// NewRedissonLimiter returns a handle on the limiter whose config hash is name.
// opts.Mode and opts.ClientID tune it; a nil opts means Redisson 3.17.0 and
// later, under this Client's id.
func (c *Client) NewRedissonLimiter(name string, opts *LimiterOptions) *RedissonLimiter {
	c.reg.announce(name)
	l := &RedissonLimiter{c: c, name: name, clientID: c.ID()}
	if opts != nil {
		l.mode = opts.Mode
		if opts.ClientID != "" {
			l.clientID = opts.ClientID
		}
	}
	switch {
	case validateName(name) != nil:
		l.err = validateName(name)
	case l.mode < RedissonSliding || l.mode > RedissonFixed:
		l.err = invalid("mode", "unknown Redisson mode %d", int(l.mode))
	}
	return l
}

// Name is the config hash's key.
func (l *RedissonLimiter) Name() string { return l.name }

// Mode is the Redisson version the handle emulates.
func (l *RedissonLimiter) Mode() RedissonMode { return l.mode }

func (l *RedissonLimiter) algorithm() string {
	if l.mode == RedissonFixed {
		return "fixed"
	}
	return "sliding"
}

func (l *RedissonLimiter) keys() []string {
	return []string{l.name, wire.RedissonValueKey(l.name, ""), wire.RedissonValueKey(l.name, l.clientID),
		wire.RedissonPermitsKey(l.name, ""), wire.RedissonPermitsKey(l.name, l.clientID), wire.StatsKey(l.name)}
}

// TrySetRate configures the limiter unless it is configured already
// (Redisson's trySetRate); it reports whether this call configured it.
// ErrWrongKind when the key holds something other than a hash.
func (l *RedissonLimiter) TrySetRate(ctx context.Context, typ RateType, rate int64, interval time.Duration) (bool, error) {
	if err := l.validate(typ, rate, interval); err != nil {
		return false, err
	}
	code, err := l.c.runScript(ctx, redissonTrySetRateScript, []string{l.name},
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
//
// A change of type (overall <-> per client) deletes the old type's state
// this handle can name: the overall value and grants, and this client's
// per-client value and grants. Other clients' per-client keys can only be
// found with a SCAN; the console's limiter edit removes those.
func (l *RedissonLimiter) SetRate(ctx context.Context, typ RateType, rate int64, interval time.Duration, keepState bool) error {
	if err := l.validate(typ, rate, interval); err != nil {
		return err
	}
	overall := []string{wire.RedissonValueKey(l.name, ""), wire.RedissonPermitsKey(l.name, "")}
	own := []string{wire.RedissonValueKey(l.name, l.clientID), wire.RedissonPermitsKey(l.name, l.clientID)}
	if typ == RatePerClient {
		overall, own = own, overall
	}
	// The new type's pair first, then the other type's (see the script's
	// header).
	keys := append(append([]string{l.name}, overall...), own...)
	alg := wire.AlgorithmSlidingWindow
	if l.mode == RedissonFixed {
		alg = wire.AlgorithmFixedWindow
	}
	return runSetRate(ctx, l.c.rdb, keys, rate, interval.Milliseconds(), strconv.Itoa(int(typ)), keepState, alg)
}

func (l *RedissonLimiter) validate(typ RateType, rate int64, interval time.Duration) error {
	if l.err != nil {
		return l.err
	}
	if typ != RateOverall && typ != RatePerClient {
		return invalid("type", "must be 0 (overall) or 1 (per client), got %d", int(typ))
	}
	return validateRedissonRate(rate, float64(interval.Milliseconds()))
}

// TryAcquire tries once to take n permits (Redisson's tryAcquire(n)). A
// rejection is Allowed false, not an error; Remaining is the window's value
// after the decision, RetryAfter Redisson's delay before trying again, and
// for a fixed window ResetAfter when the window ends. ErrNotConfigured when
// no limiter is configured at the name; n above the rate is a
// *ValidationError (the attempt counts as an error in the stats).
func (l *RedissonLimiter) TryAcquire(ctx context.Context, n int64) (Result, error) {
	if l.err != nil {
		return Result{}, l.err
	}
	if n < 1 || n > math.MaxUint32 {
		return Result{}, invalid("permits", "must be between 1 and %d, got %d", int64(math.MaxUint32), n)
	}
	res, err := l.c.runScript(ctx, redissonAcquireScript, l.keys(), n, l.algorithm(), l.grantID(),
		l.mode.memberFormat()).Int64Slice()
	if err != nil {
		return Result{}, bucketRedisErr(err)
	}
	if len(res) != 3 {
		return Result{}, fmt.Errorf("store: redisson acquire: reply of %d elements, want 3", len(res))
	}
	out := Result{Allowed: res[0] == 1, Permits: n, Remaining: res[2]}
	if !out.Allowed {
		out.RetryAfter = time.Duration(res[1]) * time.Millisecond
		if l.mode == RedissonFixed {
			out.ResetAfter = out.RetryAfter
		}
	}
	switch res[0] {
	case 1, -1:
		return out, nil
	case 0:
		return out, ErrNotConfigured
	case -4:
		return out, invalid("permits", "%d is more than the limiter's rate", n)
	case -6:
		return out, fmt.Errorf("%w: %q has a value key without expiry, kept by a sliding-window Redisson", ErrRedissonMode, l.name)
	}
	return out, ErrWrongKind
}

// grantID is the random part of a grant member, as the mode's Redisson
// makes it: 8 random bytes, or for "fI" a random integer (Redisson packs a
// random long as a float).
func (l *RedissonLimiter) grantID() string {
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand never fails on Linux
	if l.mode == RedissonSliding3133 {
		return strconv.FormatInt(int64(binary.LittleEndian.Uint64(id[:])>>1), 10)
	}
	return string(id[:])
}

// Acquire takes n permits, waiting as long as ctx allows (Redisson's
// acquire(n), and tryAcquire(n, timeout) with a ctx deadline): after a
// rejection it sleeps Redisson's delay and tries again, and gives up at
// once when ctx's deadline comes before that delay ends. The error then
// matches ErrRateLimited and ctx's error.
func (l *RedissonLimiter) Acquire(ctx context.Context, n int64) (Result, error) {
	return acquireLoop(ctx, func(ctx context.Context) (Result, error) { return l.TryAcquire(ctx, n) })
}
