package inspect

import (
	"sort"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Limiter families: many keys of one limiter shape shown as one thing.
// Per-IP access counters (every key matching one ObjectPatterns.Counters
// pattern, with ObjectPatterns.GroupCounters) and the clients of a
// Redisson PER_CLIENT limiter ({name}:value:<client>) can number 100,000
// keys; listed one row each they would swamp the console and its reads.
// A FamilyReader reads their members in bounded pages instead, and a
// FamilyBook keeps, per family, the top offenders of the last minute and
// hour (family_book.go).

// FamilyKind says what the members of a family are.
type FamilyKind string

const (
	// FamilyCounters are the access counters matching one counter pattern.
	FamilyCounters FamilyKind = "counters"
	// FamilyPerClient are the clients of one Redisson PER_CLIENT limiter.
	FamilyPerClient FamilyKind = "per-client"
)

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
	// scan is the SCAN MATCH of the member keys; prefix is what is cut
	// off a member key to name the member (a per-client limiter's clients).
	scan, prefix string
}

// Families are the families among the configured counter patterns (with
// GroupCounters) and the per-client Redisson limiters in lims, at most
// MaxFamilies, counter patterns first.
func (c *Inspector) Families(lims []LimiterInfo) []Family {
	var out []Family
	p := c.ObjectPatterns()
	if p.GroupCounters {
		for _, r := range p.Counters {
			out = append(out, Family{ID: r.Pattern, Kind: FamilyCounters, Limit: r.Limit, Window: r.Window, scan: r.Pattern})
		}
	}
	var per []Family
	for _, l := range lims {
		if l.Kind == KindRedissonLimiter && l.PerClient {
			prefix := wire.RedissonValueKey(l.Name, "") + ":"
			per = append(per, Family{ID: l.Name, Kind: FamilyPerClient, Limit: l.Rate,
				Window: time.Duration(l.IntervalMS) * time.Millisecond, scan: escapeGlob(prefix) + "*", prefix: prefix})
		}
	}
	sort.Slice(per, func(i, j int) bool { return per[i].ID < per[j].ID })
	out = append(out, per...)
	return out[:min(len(out), MaxFamilies)]
}

// grouped reports whether name is read as a member of a counter family,
// not listed on its own.
func (p ObjectPatterns) grouped(name string) bool {
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
	// TTL is the rest of the window; negative when the key has no expiry.
	TTL time.Duration
	// NewAdmitted and NewRejected are the hits this reading adds to what
	// earlier readings of the same window saw (family_memo.go).
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

// Reading cost. A tick reads at most FamilyReadsPerTick members over all
// families (three commands each for a counter: STRLEN, GETRANGE, PTTL;
// one window script for a client), and at most FamilyScansPerTick
// families whose listed members run short SCAN one page (COUNT
// familyScanCount) on each node. So a tick sends at most
// 3*FamilyReadsPerTick reads and FamilyScansPerTick SCANs per node,
// whatever the number of members or families: 100,000 per-IP keys take
// 100,000 / (FamilyReadsPerTick * 5 ticks a second) = 80 s a pass, at the
// same cost per tick as 300; a keyspace of a million keys takes 1,000,000
// / familyScanCount ticks to list. The SCAN pages examine 10,000 keys a
// second, the reads 1,250 members, a few ms of Redis CPU a second.
const (
	FamilyReadsPerTick = 250
	FamilyScansPerTick = 2
	familyScanCount    = 1000
)

// FamilySize is how many members a family's passes found.
type FamilySize struct {
	// Keys is the members of the last complete pass, or of the current
	// one while it has found more (or none has completed).
	Keys   int64
	Passes int64
}

// FamilyReader reads families' members in bounded pages. It is not safe
// for concurrent use (the sampler's goroutine owns it).
type FamilyReader struct {
	in    *Inspector
	match string // the console's --match: members outside it are not read
	scans map[string]*familyScan
	turn  int // the family that reads first next tick
	// memoLen counts the memo entries of every family, at most
	// familyMemoCap.
	memoLen int
	cost    FamilyCost // the last Tick's
}

// FamilyCost is what one Tick sent: its commands by name (for a page
// read in the walker's pipeline, Walker.Carry, only those sent outside
// it), and the keys its SCAN pages examined (the COUNTs sent).
// Walker.Charge prices it into the walk's budget.
type FamilyCost struct {
	Reads   map[string]int
	Scanned int64
}

// Charge counts a FamilyReader's tick in the walk's pacing: its reads as
// the console's other commands, its SCAN pages' keys as keys the walk's
// SCAN usec paid for (Redis counts both in one cmdstat_scan). A page the
// walker carried is charged by its Tick.
func (w *Walker) Charge(c FamilyCost) {
	if w.scans {
		w.pace.countSent(c.Reads, nil)
		w.pace.keys += c.Scanned
	}
}

// familyScan is one family's walk over its members.
type familyScan struct {
	fam     Family
	cursors map[string]uint64 // by node address; absent: not started this pass
	ended   map[string]bool   // nodes whose cursor came back to 0 this pass
	pending []string          // listed, not yet read
	found   int64             // members read this pass
	size    FamilySize
	// memo is what earlier readings of running windows saw
	// (family_memo.go).
	memo map[uint64]windowMark
}

// NewFamilyReader reads the members matching match ("" or "*": all).
func (c *Inspector) NewFamilyReader(match string) *FamilyReader {
	if match == "" {
		match = "*"
	}
	return &FamilyReader{in: c, match: match, scans: map[string]*familyScan{}}
}

// Sizes are the families' sizes so far, by Family.ID.
func (r *FamilyReader) Sizes() map[string]FamilySize {
	out := make(map[string]FamilySize, len(r.scans))
	for id, s := range r.scans {
		out[id] = s.size
	}
	return out
}
