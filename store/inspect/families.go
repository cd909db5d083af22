package inspect

import (
	"sort"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/conv"
)

// Limiter families: many keys of one limiter shape shown as one thing.
// Per-IP access counters (every key matching one ObjectPatterns.Counters
// pattern, with ObjectPatterns.GroupCounters) and the clients of a
// Redisson PER_CLIENT limiter ({name}:value:<client>) can number 100,000
// keys; listed one row each they would swamp the console and its reads.
// Here is what a family is and what the console shows of it; package
// family reads the members in bounded pages and keeps each family's top
// offenders of the last minute and hour.

// FamilyKind says what the members of a family are.
type FamilyKind string

const (
	// FamilyCounters are the access counters matching one counter pattern.
	FamilyCounters FamilyKind = "counters"
	// FamilyPerClient are the clients of one Redisson PER_CLIENT limiter.
	FamilyPerClient FamilyKind = "per-client"
	// FamilyEnvoy are the windows of one domain of Envoy's rate limit
	// service (KindEnvoyRatelimit): a key per descriptor and window.
	FamilyEnvoy FamilyKind = "envoy-ratelimit"
	// FamilyExpress are express-rate-limit's per-client counters
	// (KindExpressRateLimit), "rl:<client>": one family, ExpressFamilyID.
	FamilyExpress FamilyKind = "express-rate-limit"
)

// ExpressFamilyID names the family of express-rate-limit's counters.
const ExpressFamilyID = conv.ExpressPrefix + "*"

// MaxFamilies bounds the families read and kept: counter patterns first
// (at most MaxPatterns), then per-client limiters by name.
const MaxFamilies = 64

// Family is one group of keys of one limiter shape.
type Family struct {
	// ID names the family: the counter pattern, or the limiter's name.
	ID   string
	Kind FamilyKind
	// Limit is the hits (or permits) one window admits; 0 when unknown.
	Limit int64
	// Window is the window's length; 0 when unknown.
	Window time.Duration
}

// Families are the families among the configured counter patterns (with
// GroupCounters), the Envoy domains discovery met and the per-client
// Redisson limiters in lims, at most MaxFamilies, counter patterns first.
func (c *Inspector) Families(lims []LimiterInfo) []Family {
	var out []Family
	p := c.ObjectPatterns()
	if p.GroupCounters {
		for _, r := range p.Counters {
			out = append(out, Family{ID: r.Pattern, Kind: FamilyCounters, Limit: r.Limit, Window: r.Window})
		}
	}
	if c.conv.ExpressSeen() {
		out = append(out, Family{ID: ExpressFamilyID, Kind: FamilyExpress})
	}
	for _, d := range c.conv.EnvoyDomains() {
		out = append(out, Family{ID: d, Kind: FamilyEnvoy})
	}
	var per []Family
	for _, l := range lims {
		if l.Kind == KindRedissonLimiter && l.PerClient {
			per = append(per, Family{ID: l.Name, Kind: FamilyPerClient, Limit: l.Rate,
				Window: time.Duration(l.IntervalMS) * time.Millisecond})
		}
	}
	sort.Slice(per, func(i, j int) bool { return per[i].ID < per[j].ID })
	out = append(out, per...)
	return out[:min(len(out), MaxFamilies)]
}

// Member reports whether key is one of f's members a reset may name: a
// counter its pattern matches, a window of its Envoy domain.
func (f Family) Member(key string) bool {
	switch f.Kind {
	case FamilyCounters:
		return GlobMatch(f.ID, key)
	case FamilyEnvoy:
		d, ok := conv.EnvoyDomain(key)
		return ok && d == f.ID
	case FamilyExpress:
		return GlobMatch(f.ID, key)
	}
	return false
}

// Grouped reports whether name is read as a member of a counter family,
// not listed on its own.
func (p ObjectPatterns) Grouped(name string) bool {
	if !p.GroupCounters {
		return false
	}
	for _, r := range p.Counters {
		if GlobMatch(r.Pattern, name) {
			return true
		}
	}
	return false
}

// FamilyReading is one member as one read found it: its current window.
type FamilyReading struct {
	Family string // Family.ID
	Key    string // the member's key
	ID     string // what a row names it by: the counter's name, the client's id
	// Count is the hits of the window so far (a counter counts rejected
	// hits too), or the permits a client was granted in it.
	Count int64
	Limit int64 // 0: unknown
	// TTL is the rest of the window; negative when the key has no expiry
	// (and for a sliding window, which has no end).
	TTL time.Duration
	// NewAdmitted and NewRejected are the hits this reading adds to what
	// earlier readings of the same window saw (package family).
	NewAdmitted, NewRejected int64
}

// Admitted is how many of Count the limit admitted (all when unknown).
func (r FamilyReading) Admitted() int64 {
	if r.Limit > 0 {
		return min(r.Count, r.Limit)
	}
	return r.Count
}

// Rejected is how many of Count were over the limit (0 when unknown).
func (r FamilyReading) Rejected() int64 {
	if r.Limit > 0 {
		return max(0, r.Count-r.Limit)
	}
	return 0
}

// Fill is Count as a share of the limit (0 when unknown); above 1 the
// member is being rejected.
func (r FamilyReading) Fill() float64 {
	if r.Limit > 0 {
		return float64(r.Count) / float64(r.Limit)
	}
	return 0
}

// Offender is one member in a ranking, over the ranking's span.
type Offender struct {
	ID  string `json:"id"`
	Key string `json:"key"`
	// Admitted and Rejected sum the hits the member's readings in the span
	// saw (each window counted once); with Space-Saving counting they may
	// overstate a member that entered a full ranking by at most the count
	// it displaced.
	Admitted int64 `json:"admitted"`
	Rejected int64 `json:"rejected"`
	// Fill is the highest share of the limit a reading showed.
	Fill float64 `json:"fill"`
}

// FamilySpan is a family's totals and rankings over one span.
type FamilySpan struct {
	// Readings is how many member readings fell in the span; Admitted
	// and Rejected the hits they saw (a lower bound of the traffic: a
	// window's hits after its member's last reading are not seen).
	Readings     int64      `json:"readings"`
	Admitted     int64      `json:"admitted"`
	Rejected     int64      `json:"rejected"`
	MostRejected []Offender `json:"most_rejected"`
	MostAdmitted []Offender `json:"most_admitted"`
	NearestLimit []Offender `json:"nearest_limit"`
}

// FamilyRow is one family as the console lists it.
type FamilyRow struct {
	ID       string     `json:"pattern"`
	Kind     FamilyKind `json:"kind"`
	Limit    int64      `json:"limit"`
	WindowMS int64      `json:"window_ms"`
	// Keys is how many members the last pass read.
	Keys   int64      `json:"keys"`
	Passes int64      `json:"passes"`
	Minute FamilySpan `json:"minute"`
	Hour   FamilySpan `json:"hour"`
	// Clients are a per-client limiter's clients as the family's readings
	// last found them, at most MaxClientsShown, sorted by client id
	// (package family's Reader.Clients); nil for counters.
	Clients []ClientWindow `json:"clients,omitempty"`
}
