package inspect

import (
	"github.com/redis/go-redis/v9"
)

// How a sample reads each kind. An object is read one of a few ways,
// decided by its name: a string by a configured pattern or a store
// client's announcement (token and deadline locks, counters), an idle hash
// lock lightly when the walk asks (sidekeys.go), every other name as a
// hash whose fields tell its kind (classify.go). Each way is a pair: its
// read function queues the commands (or declines the name), and the
// kindRead it returns parses their replies into the model. Adding a kind
// read another way is adding a pair to lockReads or limiterReads.

// A kindRead is one object's commands in a sample's pipeline.
type kindRead interface {
	// own is the read of the object's own key.
	own() redis.Cmder
	// answers are the reads whose failure to reach their node leaves the
	// object unread (own among them; nil ones are skipped).
	answers() []redis.Cmder
	// ringed says the sample reads the object's stats ring beside it.
	ringed() bool
	// parse adds the object to r's Sample as the replies say, or leaves it
	// out when the key no longer holds one; ring is its stats ring's read.
	parse(r *sampleRead, name string, ring *redis.MapStringStringCmd)
}

// The ways locks and limiters are read, tried in order: the first that
// takes a name reads it.
var (
	lockReads    = []func(r *sampleRead, name string) kindRead{readConvention(false), readStringLock, readLightLock, readHashLock}
	limiterReads = []func(r *sampleRead, name string) kindRead{readConvention(true), readCounter, readHashLimiter}
)

// stringLockRead is a token or deadline lock: STRLEN, GETRANGE and PTTL
// of its string, and its hold times.
type stringLockRead struct {
	str  stringRead
	held *redis.MapStringStringCmd
}

func readStringLock(r *sampleRead, name string) kindRead {
	if !r.patterns.isTokenLockName(name) {
		return nil
	}
	return &stringLockRead{str: queueStringRead(r.ctx, r.pipe, name), held: queueHoldTimes(r.ctx, r.pipe, name)}
}

func (x *stringLockRead) own() redis.Cmder       { return x.str.strlen }
func (x *stringLockRead) answers() []redis.Cmder { return []redis.Cmder{x.str.strlen} }
func (x *stringLockRead) ringed() bool           { return true }

func (x *stringLockRead) parse(r *sampleRead, name string, _ *redis.MapStringStringCmd) {
	if info, _ := x.str.classify(r.patterns, name, r.nowMS); info != nil {
		applyHoldTimes(info, x.held)
		r.s.Locks = append(r.s.Locks, *info)
	}
}

// lightLockRead is an idle hash lock's light read: its hash, its lease and
// one EXISTS over the side keys that can appear beside an unchanged hash
// (sidekeys.go). It reads no stats ring: the lock was idle, with zero
// counts, and a ring EXISTS finds is read by the full read that follows.
type lightLockRead struct {
	fields *redis.MapStringStringCmd
	pttl   *redis.DurationCmd
	exists *redis.IntCmd
}

func readLightLock(r *sampleRead, name string) kindRead {
	n, ok := r.opts.Light[name]
	if !ok {
		return nil
	}
	keys, ok := lightSideKeys(name, lightToken+lightTurn(n%2))
	if !ok {
		return nil
	}
	return &lightLockRead{fields: r.pipe.HGetAll(r.ctx, name), pttl: r.pipe.PTTL(r.ctx, name),
		exists: r.pipe.Exists(r.ctx, keys...)}
}

func (x *lightLockRead) own() redis.Cmder       { return x.fields }
func (x *lightLockRead) answers() []redis.Cmder { return []redis.Cmder{x.fields, x.exists} }
func (x *lightLockRead) ringed() bool           { return false }

func (x *lightLockRead) parse(r *sampleRead, name string, _ *redis.MapStringStringCmd) {
	r.s.Stats[name] = Summary{Bucket: r.bucket}
	fields, err := x.fields.Result()
	if err != nil {
		return
	}
	if info, ok := classifyLock(name, fields, x.pttl.Val()); ok {
		r.s.Locks = append(r.s.Locks, info)
		// A failed EXISTS counts as found, so the lock gets the full read.
		n, err := x.exists.Result()
		r.seen.SideKeys[name] = err != nil || n > 0
	}
}

// hashLockRead is a hash lock's full read: HGETALL and PTTL of its hash,
// and the side keys of the RLock family (fair queue, fencing token, hold
// times, store's hand-off queue, poll waiters; enrich.go).
type hashLockRead struct {
	fields *redis.MapStringStringCmd
	pttl   *redis.DurationCmd
	sides  *lockSides
}

func readHashLock(r *sampleRead, name string) kindRead {
	return &hashLockRead{fields: r.pipe.HGetAll(r.ctx, name), pttl: r.pipe.PTTL(r.ctx, name),
		sides: queueRLockSides(r.ctx, r.pipe, name)}
}

func (x *hashLockRead) own() redis.Cmder       { return x.fields }
func (x *hashLockRead) answers() []redis.Cmder { return []redis.Cmder{x.fields} }
func (x *hashLockRead) ringed() bool           { return true }

func (x *hashLockRead) parse(r *sampleRead, name string, ring *redis.MapStringStringCmd) {
	fields, err := x.fields.Result()
	if err != nil {
		return
	}
	if info, ok := classifyLock(name, fields, x.pttl.Val()); ok {
		x.sides.apply(&info, r.nowMS)
		r.s.Locks = append(r.s.Locks, info)
		r.seen.SideKeys[name] = x.sides.found() || present(ring)
	}
}

// counterRead is an access counter, by its pattern: STRLEN, GETRANGE and
// PTTL of its string.
type counterRead struct{ str stringRead }

func readCounter(r *sampleRead, name string) kindRead {
	if _, ok := r.patterns.counterRule(name); !ok {
		return nil
	}
	return &counterRead{str: queueStringRead(r.ctx, r.pipe, name)}
}

func (x *counterRead) own() redis.Cmder       { return x.str.strlen }
func (x *counterRead) answers() []redis.Cmder { return []redis.Cmder{x.str.strlen} }
func (x *counterRead) ringed() bool           { return true }

func (x *counterRead) parse(r *sampleRead, name string, _ *redis.MapStringStringCmd) {
	if _, info := x.str.classify(r.patterns, name, r.nowMS); info != nil {
		r.s.Limiters = append(r.s.Limiters, *info)
	}
}

// hashLimiterRead is a token bucket or Redisson limiter: HGETALL of its
// hash and, unless the last sample found a token bucket there, the
// window of a Redisson limiter (an EVALSHA that finds nothing for a
// bucket; Inspector.plainBuckets).
type hashLimiterRead struct {
	fields *redis.MapStringStringCmd
	window *redis.Cmd // nil for a known token bucket
}

func readHashLimiter(r *sampleRead, name string) kindRead {
	x := &hashLimiterRead{fields: r.pipe.HGetAll(r.ctx, name)}
	if _, plain := r.c.plainBuckets.Load(name); !plain {
		x.window = queueWindowState(r.ctx, r.pipe, name, "")
		r.scripts = append(r.scripts, x.window)
	}
	return x
}

func (x *hashLimiterRead) own() redis.Cmder { return x.fields }
func (x *hashLimiterRead) ringed() bool     { return true }

func (x *hashLimiterRead) answers() []redis.Cmder {
	if x.window == nil {
		return []redis.Cmder{x.fields}
	}
	return []redis.Cmder{x.fields, x.window}
}

func (x *hashLimiterRead) parse(r *sampleRead, name string, _ *redis.MapStringStringCmd) {
	fields, err := x.fields.Result()
	if err != nil {
		r.c.plainBuckets.Delete(name)
		return
	}
	info, ok := classifyLimiter(name, fields, r.nowMS)
	if !ok || info.Kind == KindRedissonLimiter {
		r.c.plainBuckets.Delete(name)
	} else if x.window != nil { // not yet known as a bucket
		r.c.plainBuckets.Store(name, struct{}{})
	}
	if !ok {
		return
	}
	if x.window == nil && info.Kind == KindRedissonLimiter && !info.PerClient {
		// It was a token bucket last tick: its window is read next tick.
		info.AvailableUnknown = true
	}
	applyWindowCmd(&info, x.window)
	r.s.Limiters = append(r.s.Limiters, info)
}
