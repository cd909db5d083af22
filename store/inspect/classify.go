package inspect

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/conv"
	"github.com/lockwarden/lockwarden/store/inspect/internal/num"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Classification decides, from what one HGETALL (and PTTL) returned, whether
// a hash is a lock or limiter of a kind lockwarden knows. The console shows
// and can break what it classifies, so every rule errs on the side of "not
// ours": an application hash that happens to look similar must never be
// listed, let alone force-unlocked.

// lockParsers and limiterParsers list the known layouts. A new kind adds its
// parser here and Discover and Sample pick it up.
var (
	lockParsers = []func(name string, fields map[string]string, pttl time.Duration) (LockInfo, bool){
		parseLock,
		parseRWLock,
		parseConventionLock,
	}
	limiterParsers = []func(name string, fields map[string]string, nowMS int64) (LimiterInfo, bool){
		parseTokenBucket,
		parseRedissonLimiter,
		parseConventionLimiter,
	}
)

// classifyLock tries every lock layout on one hash.
func classifyLock(name string, fields map[string]string, pttl time.Duration) (LockInfo, bool) {
	if wire.IsInternalKey(name) || len(fields) == 0 || len(fields) > MaxHashFields {
		return LockInfo{}, false
	}
	for _, parse := range lockParsers {
		if info, ok := parse(name, fields, pttl); ok {
			return info, true
		}
	}
	return LockInfo{}, false
}

// classifyLimiter tries every limiter layout on one hash.
func classifyLimiter(name string, fields map[string]string, nowMS int64) (LimiterInfo, bool) {
	if wire.IsInternalKey(name) || len(fields) == 0 || len(fields) > MaxHashFields {
		return LimiterInfo{}, false
	}
	for _, parse := range limiterParsers {
		if info, ok := parse(name, fields, nowMS); ok {
			return info, true
		}
	}
	return LimiterInfo{}, false
}

// parseLock classifies a hash as a Redisson RLock: exactly one field
// "<uuid>:<owner>" holding a positive reentry count, and a lease. Redisson
// always sets the lease (a watchdog renews it), so a hash without one is an
// application's counter that merely looks like a lock. Besides it the hash
// may hold lockwarden's own fields (wire.HoldField): the holder's hold
// record, read here, and the queued mark.
func parseLock(name string, fields map[string]string, pttl time.Duration) (LockInfo, bool) {
	if wire.IsInternalKey(name) || len(fields) == 0 || len(fields) > 3 || pttl <= 0 {
		return LockInfo{}, false
	}
	var h Holder
	for field, value := range fields {
		if wire.IsLockwardenField(field) {
			continue
		}
		count, ok := num.CanonicalInt(value)
		if h.ID != "" || !wire.IsHolderField(field) || !ok || count <= 0 {
			return LockInfo{}, false
		}
		h = Holder{ID: field, Count: count}
	}
	if h.ID == "" {
		return LockInfo{}, false
	}
	for field := range fields {
		if wire.IsLockwardenField(field) && field != wire.QueuedField && field != wire.HoldField(h.ID) {
			return LockInfo{}, false // a hold record of another holder: not this layout
		}
	}
	if acq, ren, ok := wire.ParseHoldRecord(fields[wire.HoldField(h.ID)]); ok {
		h.AcquiredMS, h.RenewedMS = acq, ren
	}
	// Fair and fenced locks share this hash; their side keys, read by
	// queueLockSides, tell them apart.
	return LockInfo{
		Name:    name,
		Kind:    KindReentrant,
		Holders: []Holder{h},
		PTTL:    pttl,
		Channel: wire.UnlockChannel(name),
	}, true
}

// A token bucket's field names.
const (
	tbLastMS    = "last_mill_second"
	tbStored    = "stored_permits"
	tbMax       = "max_permits"
	tbInterval  = "interval"
	tbApp       = "app"
	tbNumFields = 5
)

// parseTokenBucket classifies a hash as a token bucket: exactly its
// five fields, numbers where numbers belong, a capacity of at least one and
// a positive refill interval. nowMS is Redis time, so Available is what an
// acquire running now would see.
func parseTokenBucket(name string, fields map[string]string, nowMS int64) (LimiterInfo, bool) {
	if wire.IsInternalKey(name) || len(fields) != tbNumFields {
		return LimiterInfo{}, false
	}
	app := fields[tbApp]
	if app == "" {
		return LimiterInfo{}, false
	}
	last, ok1 := num.Finite(fields[tbLastMS])
	stored, ok2 := num.Finite(fields[tbStored])
	maxPermits, ok3 := num.Finite(fields[tbMax])
	interval, ok4 := num.Finite(fields[tbInterval])
	if !ok1 || !ok2 || !ok3 || !ok4 || maxPermits < 1 || interval <= 0 {
		return LimiterInfo{}, false
	}
	// Same refill as the acquire script: whole intervals since the last
	// refill, never negative (a clock that went back adds nothing), capped.
	refill := math.Max(0, math.Floor((float64(nowMS)-last)/interval))
	avail := math.Floor(math.Min(maxPermits, stored+refill))
	return LimiterInfo{
		Name:       name,
		Kind:       KindTokenBucket,
		Rate:       clampInt64(math.Floor(maxPermits)),
		IntervalMS: interval,
		PerSecond:  math.Min(1000/interval, math.MaxFloat64), // a subnormal interval overflows to +Inf
		Available:  clampInt64(math.Max(0, avail)),
		App:        app,
	}, true
}

// clampInt64 converts f to int64 without the undefined behaviour of
// out-of-range conversions.
func clampInt64(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// parseRWLock classifies a hash as a Redisson RReadWriteLock: a "mode" of
// read or write, at least one holder field "<uuid>:<thread>" (reader) or
// "<uuid>:<thread>:write" (writer) with a positive count, and a lease. In
// write mode there is exactly one writer, and readers only of the writer's
// own thread (a writer may take read levels); in read mode no writer.
func parseRWLock(name string, fields map[string]string, pttl time.Duration) (LockInfo, bool) {
	mode := fields[wire.RWModeField]
	if wire.IsInternalKey(name) || len(fields) < 2 || pttl <= 0 || (mode != wire.RWModeRead && mode != wire.RWModeWrite) {
		return LockInfo{}, false
	}
	info := LockInfo{Name: name, Kind: KindRWLock, Mode: mode, PTTL: pttl,
		Channel: wire.RWLockChannel(name)}
	writer := ""
	for field, value := range fields {
		if field == wire.RWModeField {
			continue
		}
		count, ok := num.CanonicalInt(value)
		if !wire.IsHolderField(field) || !ok || count <= 0 {
			return LockInfo{}, false
		}
		h := Holder{ID: field, Count: count, Mode: wire.RWModeRead}
		if strings.HasSuffix(field, wire.RWWriteSuffix) {
			if writer != "" {
				return LockInfo{}, false
			}
			writer = field
			h.Mode = wire.RWModeWrite
		}
		info.Holders = append(info.Holders, h)
	}
	if (mode == wire.RWModeWrite) != (writer != "") {
		return LockInfo{}, false
	}
	if writer != "" {
		thread := strings.TrimSuffix(writer, wire.RWWriteSuffix)
		for _, h := range info.Holders {
			if h.Mode == wire.RWModeRead && h.ID != thread {
				return LockInfo{}, false
			}
		}
	}
	// Map order is random; the console lists holders in a stable order,
	// the writer first.
	sort.Slice(info.Holders, func(i, j int) bool {
		a, b := info.Holders[i], info.Holders[j]
		if a.Mode != b.Mode {
			return a.Mode == wire.RWModeWrite
		}
		return a.ID < b.ID
	})
	return info, true
}

// Redisson rate limiter config fields.
const (
	rlRate      = "rate"
	rlInterval  = "interval"
	rlType      = "type"
	rlKeepAlive = "keepAliveTime"
)

// parseRedissonLimiter classifies a hash as a Redisson RRateLimiter config:
// rate, interval and type, optionally keepAliveTime, and nothing else;
// whole numbers as Redisson writes them, type 0 or 1. The state lives in
// other keys, so Available stays unknown until a window read
// (queueLimiterState, queueWindowState) fills it in.
func parseRedissonLimiter(name string, fields map[string]string, _ int64) (LimiterInfo, bool) {
	if wire.IsInternalKey(name) || len(fields) < 3 || len(fields) > 4 {
		return LimiterInfo{}, false
	}
	rate, ok1 := num.CanonicalInt(fields[rlRate])
	interval, ok2 := num.CanonicalInt(fields[rlInterval])
	typ := fields[rlType]
	if !ok1 || !ok2 || rate < 1 || interval < 1 || (typ != "0" && typ != "1") {
		return LimiterInfo{}, false
	}
	var keepAlive int64
	if len(fields) == 4 {
		v, ok := fields[rlKeepAlive]
		if !ok {
			return LimiterInfo{}, false
		}
		if keepAlive, ok = num.CanonicalInt(v); !ok || keepAlive < 0 {
			return LimiterInfo{}, false
		}
	}
	return LimiterInfo{
		Name:             name,
		Kind:             KindRedissonLimiter,
		Rate:             rate,
		IntervalMS:       float64(interval),
		PerSecond:        float64(rate) * 1000 / float64(interval),
		PerClient:        typ == "1",
		KeepAliveMS:      keepAlive,
		AvailableUnknown: true,
		RejectionsHidden: true,
	}, true
}

// classifyString decides what a string is: a framework convention that
// claims its name and whose value has that library's shape (unless a store
// client announced the name), else by configured pattern a counter
// (counter pattern and a whole number) or a token lock (token-lock
// pattern, a non-empty value of at most wire.MaxStringValue bytes).
// strlen is the full length; value may be a prefix of it; nowMS is Redis
// time.
func classifyString(p ObjectPatterns, name, value string, strlen int64, pttl time.Duration, nowMS int64) (*LockInfo, *LimiterInfo) {
	if wire.IsInternalKey(name) || strlen == 0 || strlen > wire.MaxStringValue || int64(len(value)) != strlen {
		return nil, nil
	}
	if p.announced.kind(name) == "" && !p.Grouped(name) {
		if lock, lim, ok := classifyConvention(p, "string", conv.Key{Name: name, Value: value, PTTL: pttl, NowMS: nowMS}); ok {
			return lock, lim
		}
	}
	if rule, ok := p.counterRule(name); ok {
		if n, ok := num.CanonicalInt(value); ok && n >= 0 {
			lim := counterInfo(name, n, pttl, rule)
			return nil, &lim
		}
	}
	if p.isDeadlineLockName(name) {
		// A deadline lock's value is its deadline; anything else under
		// the pattern is not one (and is never offered for deletion).
		if n, ok := num.CanonicalInt(value); ok && n > 0 {
			return &LockInfo{Name: name, Kind: KindDeadlineLock, Holders: []Holder{{ID: value, Count: 1}},
				PTTL: pttl, Deadline: time.UnixMilli(n)}, nil
		}
		return nil, nil
	}
	if p.isTokenLockName(name) {
		return &LockInfo{
			Name:    name,
			Kind:    KindTokenLock,
			Holders: []Holder{{ID: value, Count: 1}},
			PTTL:    pttl,
		}, nil
	}
	return nil, nil
}

// counterInfo describes an access counter holding n hits.
func counterInfo(name string, n int64, pttl time.Duration, rule CounterRule) LimiterInfo {
	info := LimiterInfo{
		Name:       name,
		Kind:       KindCounter,
		Count:      n,
		TTL:        pttl,
		Limit:      rule.Limit,
		LimitKnown: rule.Limit > 0,
		Rate:       rule.Limit,
		IntervalMS: float64(rule.Window.Milliseconds()),
	}
	// INCR-first counters count rejected hits too, so with the limit known Redis
	// does reveal this window's admissions: the first Limit hits.
	info.RejectionsHidden = true
	if info.LimitKnown {
		info.Available = max(0, rule.Limit-n)
		info.Grants, info.GrantsKnown = min(n, rule.Limit), true
		if rule.Window > 0 {
			info.PerSecond = float64(rule.Limit) / rule.Window.Seconds()
		}
	} else {
		info.AvailableUnknown = true
	}
	return info
}

// parseConventionLock and parseConventionLimiter try the conventions kept
// in hashes (sidekiq-unique-jobs; bottleneck, Laravel's throttle,
// Upstash's token bucket). Their reads leave pttl or nowMS 0 when not read.
func parseConventionLock(name string, fields map[string]string, pttl time.Duration) (LockInfo, bool) {
	if l, _, _ := classifyConvention(ObjectPatterns{}, "hash", conv.Key{Name: name, Fields: fields, PTTL: pttl}); l != nil {
		return *l, true
	}
	return LockInfo{}, false
}

func parseConventionLimiter(name string, fields map[string]string, nowMS int64) (LimiterInfo, bool) {
	if _, l, _ := classifyConvention(ObjectPatterns{}, "hash", conv.Key{Name: name, Fields: fields, NowMS: nowMS}); l != nil {
		return *l, true
	}
	return LimiterInfo{}, false
}

// classifyZset decides what a sorted set is (read: its first members,
// lowest score first, its size and lease): a framework convention's lock
// (Symfony Lock) or nothing.
func classifyZset(p ObjectPatterns, name string, members []redis.Z, card int64, pttl time.Duration, nowMS int64) (*LockInfo, *LimiterInfo) {
	if wire.IsInternalKey(name) || len(members) == 0 {
		return nil, nil
	}
	lock, lim, _ := classifyConvention(p, "zset", conv.Key{Name: name, Members: members, Card: card, PTTL: pttl, NowMS: nowMS})
	return lock, lim
}
