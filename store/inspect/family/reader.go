package family

import (
	"context"
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Source is what a Reader needs of the console's inspect.Inspector.
type Source interface {
	Redis() redis.UniversalClient
	ObjectPatterns() inspect.ObjectPatterns
	ForEachNode(ctx context.Context, fn func(ctx context.Context, node *redis.Client) error) error
	LoadScripts(ctx context.Context) error
}

// Reading cost. A tick reads at most readsPerTick members over all
// families (three commands each for a counter: STRLEN, GETRANGE, PTTL;
// one window script for a client), and at most scansPerTick families whose
// listed members run short SCAN one page (COUNT scanCount) on each node.
// So a tick sends at most 3*readsPerTick reads and scansPerTick SCANs per
// node, whatever the number of members or families: 100,000 per-IP keys
// take 100,000 / (readsPerTick * 5 ticks a second) = 80 s a pass, at the
// same cost per tick as 300; a keyspace of a million keys takes 1,000,000
// / scanCount ticks to list. The SCAN pages examine 10,000 keys a second,
// the reads 1,250 members, a few ms of Redis CPU a second.
const (
	readsPerTick = 250
	scansPerTick = 2
	scanCount    = 1000
)

// Size is how many members a family's passes found.
type Size struct {
	// Keys is the members of the last complete pass, or of the current
	// one while it has found more (or none has completed).
	Keys   int64
	Passes int64
}

// Reader reads families' members in bounded pages. It is not safe for
// concurrent use (the sampler's goroutine owns it).
type Reader struct {
	src   Source
	match string // the console's --match: members outside it are not read
	scans map[string]*familyScan
	turn  int // the family that reads first next tick
	// memoLen counts the memo entries of every family, at most memoCap.
	memoLen int
	cost    cost // the last page's
}

// cost is what one page sent outside the tick's pipeline (all of it, for
// Tick's own pipeline): its commands by name, and the keys its SCAN
// pages examined (the COUNTs sent).
type cost struct {
	reads   map[string]int
	scanned int64
}

// familyScan is one family's walk over its members.
type familyScan struct {
	fam     inspect.Family
	cursors map[string]uint64 // by node address; absent: not started this pass
	ended   map[string]bool   // nodes whose cursor came back to 0 this pass
	pending []string          // listed, not yet read
	found   int64             // members read this pass
	size    Size
	// memo is what earlier readings of running windows saw (memo.go).
	memo map[uint64]windowMark
	// clients are a per-client family's latest client windows (clients.go).
	clients map[string]clientSeen
}

// NewReader reads through src the members matching match ("" or "*":
// all).
func NewReader(src Source, match string) *Reader {
	if match == "" {
		match = "*"
	}
	return &Reader{src: src, match: match, scans: map[string]*familyScan{}}
}

// Sizes are the families' sizes so far, by Family.ID.
func (r *Reader) Sizes() map[string]Size {
	out := make(map[string]Size, len(r.scans))
	for id, s := range r.scans {
		out[id] = s.size
	}
	return out
}

// passOver says s's pass has listed and read every member on every node.
func (s *familyScan) passOver() bool {
	return s.cursors != nil && len(s.pending) == 0 && len(s.ended) > 0 && len(s.ended) == len(s.cursors)
}

// startPass closes s's pass when it is over and starts the next one.
func (r *Reader) startPass(s *familyScan, now time.Time) {
	if s.passOver() {
		s.size = Size{Keys: s.found, Passes: s.size.Passes + 1}
		s.cursors, s.ended, s.found = nil, nil, 0
		r.sweep(s, now)
		s.sweepClients()
	}
	if s.cursors == nil {
		s.cursors, s.ended = map[string]uint64{}, map[string]bool{}
	}
}

// list SCANs the next page of s's members on every node, or, when the
// pass is over, starts the next one.
func (r *Reader) list(ctx context.Context, s *familyScan, now time.Time) error {
	r.startPass(s, now)
	var mu sync.Mutex
	return r.src.ForEachNode(ctx, func(ctx context.Context, node *redis.Client) error {
		addr := node.Options().Addr
		mu.Lock()
		cursor, done := s.cursors[addr], s.ended[addr]
		mu.Unlock()
		if done {
			return nil
		}
		keys, next, err := node.ScanType(ctx, cursor, keyMatch(s.fam), scanCount, "string").Result()
		mu.Lock()
		defer mu.Unlock()
		r.cost.reads["scan"]++
		if err != nil {
			return err
		}
		r.cost.scanned += scanCount
		r.takePage(s, addr, keys, next)
		return nil
	})
}

// takePage takes one SCAN page of s's members from the node at addr.
func (r *Reader) takePage(s *familyScan, addr string, keys []string, next uint64) {
	s.cursors[addr] = next
	if next == 0 {
		s.ended[addr] = true
	}
	patterns := r.src.ObjectPatterns()
	for _, k := range keys {
		// A client's window is its limiter's side key: the limiter's name
		// passed --match.
		if s.fam.Kind != inspect.FamilyPerClient && (!holds(s.fam, patterns, k) || !inspect.GlobMatch(r.match, k) || wire.IsInternalKey(k)) {
			continue
		}
		s.pending = append(s.pending, k)
	}
}
