package inspect

import (
	"maps"

	"github.com/lockwarden/lockwarden/store/inspect/conv"
)

// Other libraries' locks and limiters: package conv recognises their keys
// and releases or resets them as their library does; this file turns what
// it found into the model.

// The kinds of other libraries' conventions (package conv has each
// layout).
const (
	KindShedLock         Kind = conv.ShedLock
	KindPyRedisLock      Kind = conv.PyRedisLock
	KindBullMQJobLock    Kind = conv.BullMQJobLock
	KindSpringLock       Kind = conv.SpringLock
	KindDotnetLock       Kind = conv.DotnetLock
	KindLaravelLock      Kind = conv.LaravelLock
	KindSidekiqUniqueJob Kind = conv.SidekiqUniqueJob
	KindSymfonyLock      Kind = conv.SymfonyLock
	KindLaravelThrottle  Kind = conv.LaravelThrottle
	KindBottleneck       Kind = conv.Bottleneck
	KindUpstashRatelimit Kind = conv.UpstashRatelimit
	KindExpressRateLimit Kind = conv.ExpressRateLimit
	KindEnvoyRatelimit   Kind = conv.EnvoyRatelimit
)

// IsConvention reports whether k is another library's convention.
func IsConvention(k Kind) bool { return conv.Of(string(k), "") != nil }

// conventionKinds are the conventions' lock (or limiter) kinds, in order.
func conventionKinds(limiter bool) []Kind {
	var out []Kind
	for _, k := range conv.Kinds(limiter) {
		out = append(out, Kind(k))
	}
	return out
}

// convConfig is what the conventions need of p.
func (p ObjectPatterns) convConfig() conv.Config {
	cfg := conv.Config{LaravelPrefixes: p.LaravelPrefixes, SpringRegistries: p.SpringRegistries,
		DotnetLocks: p.DotnetLocks, Memo: p.conv}
	if rules := p.Counters; len(rules) > 0 {
		cfg.CounterLimit = func(name string) int64 {
			r, _ := ObjectPatterns{Counters: rules}.counterRule(name)
			return r.Limit
		}
	}
	return cfg
}

// claimsString reports whether some convention claims the string key name
// (a member of a counter family is the family's).
func (p ObjectPatterns) claimsString(name string) bool {
	return !p.Grouped(name) && conv.Claims(p.convConfig(), name)
}

// classifyConvention tries every convention whose keys have keyType on k.
func classifyConvention(p ObjectPatterns, keyType string, k conv.Key) (*LockInfo, *LimiterInfo, bool) {
	f, ok := conv.Classify(p.convConfig(), keyType, k)
	return lockOf(f.Lock), p.limiterOf(f.Limiter), ok
}

// rememberConvention records that name holds kind's convention in a key of
// keyType, so samples read it with that convention's read.
func (p ObjectPatterns) rememberConvention(name string, kind Kind, keyType string) {
	p.conv.Set(name, conv.Of(string(kind), keyType))
}

func lockOf(l *conv.Lock) *LockInfo {
	if l == nil {
		return nil
	}
	out := &LockInfo{Name: l.Name, Kind: Kind(l.Kind), PTTL: l.PTTL, Mode: l.Mode, Channel: l.Channel,
		Recognised: l.Recognised, Holders: make([]Holder, len(l.Holders))}
	for i, h := range l.Holders {
		out.Holders[i] = Holder{ID: h.ID, Count: h.Count, Mode: h.Mode, LeaseMS: h.LeaseMS,
			AcquiredMS: h.AcquiredMS, Facts: h.Facts}
	}
	return out
}

// limiterOf is l in the model; an access counter's limit and window are
// its counter rule's.
func (p ObjectPatterns) limiterOf(l *conv.Limiter) *LimiterInfo {
	if l == nil {
		return nil
	}
	out := LimiterInfo{Name: l.Name, Kind: Kind(l.Kind), Count: l.Count, TTL: l.TTL, Rate: l.Rate,
		IntervalMS: l.IntervalMS, PerSecond: l.PerSecond, Available: l.Available, Limit: l.Limit,
		LimitKnown: l.LimitKnown, AvailableUnknown: l.AvailableUnknown, RejectionsHidden: l.RejectionsHidden}
	if l.Counter {
		rule, _ := p.counterRule(l.Name)
		out = counterInfo(l.Name, l.Count, l.TTL, rule)
		out.Kind = Kind(l.Kind)
	}
	out.Recognised, out.Facts = l.Recognised, l.Facts
	return &out
}

// applySide applies a convention's side read to the lock found at its
// key: a lock of its kind the read does not confirm is dropped, one it
// confirms gains what it read.
func applySide(s conv.Side, l *LockInfo) *LockInfo {
	if s.Read == nil || l == nil || l.Kind != Kind(s.Kind) {
		return l
	}
	facts, acquiredMS, ok := s.Read()
	if !ok {
		return nil
	}
	h := &l.Holders[0]
	maps.Copy(h.Facts, facts)
	if acquiredMS > 0 {
		h.AcquiredMS = acquiredMS
	}
	return l
}

// convTarget is what a convention's release needs of l.
func convTarget(l *LockInfo, holder string) conv.Target {
	t := conv.Target{Name: l.Name, Holder: holder, Holders: len(l.Holders), Channel: l.Channel}
	for _, h := range l.Holders {
		if h.ID == holder {
			t.Facts = h.Facts
		}
	}
	return t
}

// DescribeReset says what the console's reset does to l, and whether it
// has one: an access counter's hits are forgotten; another library's
// limiter is reset as that library's own reset does. "" with ok true is an
// access counter (the console's own words).
func (l *LimiterInfo) DescribeReset() (text string, ok bool) {
	if l.Kind == KindCounter {
		return "", true
	}
	return conv.ResetText(string(l.Kind), l.Name, l.Facts)
}
