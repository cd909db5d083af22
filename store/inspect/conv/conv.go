// Package conv recognises the locks and limiters other libraries write
// (ShedLock, Laravel, python-redis-lock, sidekiq-unique-jobs, Symfony
// Lock, BullMQ, Spring Integration, DistributedLock.Redis; bottleneck,
// express-rate-limit, Upstash, Envoy's ratelimit) and breaks or resets one
// as that library itself would, waking its own waiters. Each is in one
// file, <name>.go: its kind, which names it claims, how a key's value
// parses, its side reads, and its release (or reset) script with the plan
// that says what it does. This file is what they share: the list, the
// dispatch by key type, and the types a key is read into and parsed to.
//
// A convention is recognised from its key and its value, never the name
// alone: a string is read only when a convention claims its name (a cache
// string under another name is never transferred), and recognised only
// when its value has that library's shape. What made the decision is kept
// on the result (Lock.Recognised, Limiter.Recognised), so a reader can
// judge an ambiguous case.
//
// The package knows nothing of the console's model: package inspect reads
// the keys, turns a Found into its LockInfo or LimiterInfo and runs the
// scripts through the functions here.
package conv

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Key is one key as read: a string's value (bounded), a hash's fields,
// or a sorted set's first members, with its lease and Redis time.
type Key struct {
	Name    string
	Value   string            // string
	Fields  map[string]string // hash
	Members []redis.Z         // sorted set, lowest score first
	Card    int64             // sorted set: all members
	// PTTL is as go-redis reports it: -2 and -1 (ns) for no key and no
	// expiry, else the time left.
	PTTL  time.Duration
	NowMS int64
}

// Config is what the console's configuration tells the conventions.
type Config struct {
	// LaravelPrefixes are Laravel key prefixes not derived from an app
	// name; SpringRegistries are RedisLockRegistry keys; DotnetLocks are
	// Redis globs of DistributedLock.Redis keys.
	LaravelPrefixes, SpringRegistries, DotnetLocks []string
	// CounterLimit is the limit the console was told for the counter at
	// name (0: not told); nil when none is configured.
	CounterLimit func(name string) int64
	// Memo remembers which names hold which convention; nil remembers
	// nothing.
	Memo *Memo
}

func (c Config) counterLimit(name string) int64 {
	if c.CounterLimit == nil {
		return 0
	}
	return c.CounterLimit(name)
}

// Holder is one holder of a lock.
type Holder struct {
	ID         string
	Count      int64
	Mode       string
	LeaseMS    int64
	AcquiredMS int64
	Facts      map[string]string
}

// Lock is a lock a convention found.
type Lock struct {
	Name, Kind string
	PTTL       time.Duration
	Mode       string
	Channel    string // where its waiters hear a release
	Recognised string
	Holders    []Holder
}

// Limiter is a limiter a convention found.
type Limiter struct {
	Name, Kind                   string
	Count                        int64
	TTL                          time.Duration
	Rate, Available, Limit       int64
	IntervalMS, PerSecond        float64
	LimitKnown, AvailableUnknown bool
	RejectionsHidden             bool
	Recognised                   string
	Facts                        map[string]string
	// Counter says it is an access counter (Count hits expiring in TTL):
	// the console's counter rule for its name gives its limit and
	// window, which override Rate, IntervalMS, Available and Limit.
	Counter bool
}

// Found is what a convention found in one key: a lock or a limiter.
type Found struct {
	Lock    *Lock
	Limiter *Limiter
}

// Side is a convention's side read of one key, queued in a pipeline.
type Side struct {
	// Kind is the kind of the lock it confirms.
	Kind string
	// Read, once the pipeline ran, says whether the key is that lock after
	// all (ok) and what it adds to its holder: facts and when it acquired
	// (0: not known). Nil when there is no side read.
	Read func() (facts map[string]string, acquiredMS int64, ok bool)
}

// Target is the lock a release or plan is for, as the console read it.
type Target struct {
	Name    string
	Holder  string            // the holder to release
	Facts   map[string]string // that holder's facts
	Holders int               // how many hold it
	Channel string
}

// Plan says what a release changes.
type Plan struct {
	Deletes          []string
	RemovesField     string
	Channel, Message string
	Summary          string
}

// Convention is one library's layout.
type Convention struct {
	kind    string
	limiter bool
	// keyType is the Redis type the layout uses: "string", "hash" or "zset".
	keyType string
	// claims says whether a string key of this name may be one (string
	// layouts only; hashes and zsets are known by their contents).
	claims func(c Config, name string) bool
	// parse reads one key; ok false when it is not this layout.
	parse func(c Config, k Key) (Found, bool)
	// side queues further reads a found lock's facts need (nil: none)
	// and returns what reads them.
	side func(ctx context.Context, pipe redis.Pipeliner, name string) func() (map[string]string, int64, bool)
	// release breaks a lock (lock kinds); reset forgets a limiter's state
	// (limiter kinds). Both return the script's code: 1 done, 0 no key,
	// -1 another holder.
	release func(ctx context.Context, rdb redis.UniversalClient, c Config, t Target) (int64, error)
	plan    func(t Target) Plan
	reset   func(ctx context.Context, rdb redis.UniversalClient, name string) (int64, error)
}

// Kind is the kind of what c finds.
func (c *Convention) Kind() string { return c.kind }

// Limiter reports whether c finds limiters (else locks).
func (c *Convention) Limiter() bool { return c.limiter }

// KeyType is the Redis type c's keys have: "string", "hash" or "zset".
func (c *Convention) KeyType() string { return c.keyType }

// QueueSide queues in pipe the side reads of the key at name, if c has
// any (a Side without Read otherwise).
func (c *Convention) QueueSide(ctx context.Context, pipe redis.Pipeliner, name string) Side {
	if c.side == nil {
		return Side{}
	}
	return Side{Kind: c.kind, Read: c.side(ctx, pipe, name)}
}

// Release breaks the lock t as c's library does and returns its script's
// code (1 or 2 released, 0 no key, -1 another holder). The error is the
// script call's, as go-redis returned it.
func (c *Convention) Release(ctx context.Context, rdb redis.UniversalClient, cfg Config, t Target) (int64, error) {
	return c.release(ctx, rdb, cfg, t)
}

// Plan says what Release does to t.
func (c *Convention) Plan(t Target) Plan { return c.plan(t) }

// Resets reports whether c's limiters have a reset.
func (c *Convention) Resets() bool { return c.reset != nil }

// Reset forgets the state of the limiter at name as c's library does and
// returns its script's code (1 reset, 0 no key, else not c's layout).
func (c *Convention) Reset(ctx context.Context, rdb redis.UniversalClient, name string) (int64, error) {
	return c.reset(ctx, rdb, name)
}

// conventions are every convention, in the order they are tried.
var conventions = []*Convention{
	shedlockConvention,
	pyRedisLockConvention,
	bullmqConvention,
	springConvention,
	dotnetConvention,
	laravelLockConvention,
	sidekiqConvention,
	symfonyConvention,
	bottleneckConvention,
	laravelThrottleConvention,
	upstashConvention,
	upstashBucketConvention,
	expressRateLimitConvention,
	envoyConvention,
}

// Of is the convention of kind whose layout has the key type keyType (""
// for any); nil when kind is no convention's.
func Of(kind, keyType string) *Convention {
	for _, c := range conventions {
		if c.kind == kind && (keyType == "" || c.keyType == keyType) {
			return c
		}
	}
	return nil
}

// Kinds are the conventions' lock (or limiter) kinds, in order.
func Kinds(limiter bool) []string {
	var out []string
	for _, c := range conventions {
		if c.limiter == limiter && !slices.Contains(out, c.kind) {
			out = append(out, c.kind)
		}
	}
	return out
}

// Claims reports whether some convention claims the string key name.
func Claims(cfg Config, name string) bool {
	for _, c := range conventions {
		if c.keyType == "string" && c.claims(cfg, name) {
			return true
		}
	}
	return false
}

// QueueSides queues in pipe the side reads of every convention that
// claims the string key name.
func QueueSides(ctx context.Context, pipe redis.Pipeliner, cfg Config, name string) []Side {
	var out []Side
	for _, c := range conventions {
		if c.keyType == "string" && c.side != nil && c.claims(cfg, name) {
			out = append(out, c.QueueSide(ctx, pipe, name))
		}
	}
	return out
}

// Classify tries every convention whose keys have keyType on k (for a
// string, those that claim its name) and remembers the one that fits in
// cfg.Memo. When more than one fits, the first is kept and its
// Recognised says which others would have.
func Classify(cfg Config, keyType string, k Key) (Found, bool) {
	var found Found
	var first *Convention
	var others []string
	for _, c := range conventions {
		if c.keyType != keyType || (keyType == "string" && !c.claims(cfg, k.Name)) {
			continue
		}
		f, ok := c.parse(cfg, k)
		if !ok {
			continue
		}
		if first == nil {
			first, found = c, f
			continue
		}
		others = append(others, c.kind)
	}
	if first == nil {
		return Found{}, false
	}
	if len(others) > 0 {
		note := "; the value also fits " + strings.Join(others, ", ")
		if found.Lock != nil {
			found.Lock.Recognised += note
		}
		if found.Limiter != nil {
			found.Limiter.Recognised += note
		}
	}
	cfg.Memo.Set(k.Name, first)
	return found, true
}

// stringLock is a string lock of kind held by the key's value.
func stringLock(k Key, kind, why string, facts map[string]string) *Lock {
	return &Lock{Name: k.Name, Kind: kind, PTTL: k.PTTL, Recognised: why,
		Holders: []Holder{{ID: k.Value, Count: 1, Facts: facts}}}
}

// code is a script's integer reply.
func code(cmd *redis.Cmd) (int64, error) { return cmd.Int64() }
