package inspect

import (
	"context"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/redis/go-redis/v9"
)

// Incremental discovery. A console that rediscovers every second with full
// passes makes a SCAN call per scanCount keys and two pipelines per batch,
// about ten round trips a second on a modest keyspace. Instead a Walker
// rides in the sample pipeline: each Tick sends one SCAN page, the HLEN of
// the hashes the previous page listed, and HGETALL+PTTL of the ones that
// passed their HLEN. A key listed by tick n is classified by tick n+2, so
// the walk never transfers a large hash, and every tick stays one round
// trip.

// Scan page bounds: a page is one SCAN call, so a large page blocks Redis
// for longer; the cap keeps that to a few milliseconds.
const (
	MinScanPage = 1000
	MaxScanPage = 50000
)

// Walker samples named objects and walks the keyspace one page per tick.
// It keeps its own cursor and the keys in flight between ticks; it is not
// safe for concurrent use (one sampler goroutine owns it).
type Walker struct {
	in    *Inspector
	match string
	// share is the part of the keyspace one page covers: the tick interval
	// over the time a pass should take.
	share float64
	next  scanStep
}

// NewWalker starts a walk of the keys matching match ("" means every key)
// that covers the keyspace about once per pass when Tick runs every tick.
// It fails with store.ErrInvalid unless CanWalk.
func (c *Inspector) NewWalker(match string, tick, pass time.Duration) (*Walker, error) {
	if !c.CanWalk() {
		return nil, &store.ValidationError{Field: "walker", Message: "incremental discovery needs one node and no string patterns"}
	}
	return &Walker{in: c, match: match, share: float64(tick) / float64(max(tick, pass)),
		next: scanStep{match: match}}, nil
}

// CanWalk reports whether a Walker can ride in the sample: one node (a
// Cluster or Ring pipeline routes by key, and SCAN has none), and no string
// patterns (token locks and counters need a second SCAN type).
func (c *Inspector) CanWalk() bool {
	switch c.rdb.(type) {
	case *redis.ClusterClient, *redis.Ring:
		return false
	}
	return c.ObjectPatterns().empty()
}

// WalkStep is what one Tick's page of the walk found.
type WalkStep struct {
	// Locks and Limiters are objects the walk classified this tick that
	// were not among the names sampled; they carry what their hash says
	// (their side keys are read by the next sample that names them).
	Locks    []LockInfo
	Limiters []LimiterInfo
	// PassEnded says this page was the last of a pass: every key that
	// existed when the pass began has now been listed. Its last keys are
	// classified two ticks later.
	PassEnded bool
	// Skipped counts hashes sized this tick with more fields than any
	// known layout has (never read).
	Skipped int
}

// Tick is Inspector.Sample of locks and limiters with the walk's next step
// in the same pipeline; the step's findings are in Sample.Walk.
func (w *Walker) Tick(ctx context.Context, locks, limiters []string) (*Sample, error) {
	s, err := w.in.sampleWith(ctx, locks, limiters, &w.next)
	if err != nil {
		return nil, err // the same step is sent again next tick
	}
	r := s.scan
	known := make(map[string]bool, len(s.Locks)+len(s.Limiters)+len(r.locks)+len(r.limiters))
	for _, l := range s.Locks {
		known[l.Name] = true
	}
	for _, l := range s.Limiters {
		known[l.Name] = true
	}
	step := &WalkStep{PassEnded: r.cursor == 0, Skipped: r.skipped}
	for _, l := range r.locks {
		if !known[l.Name] {
			known[l.Name] = true
			step.Locks = append(step.Locks, l)
		}
	}
	for _, l := range r.limiters {
		if !known[l.Name] {
			known[l.Name] = true
			step.Limiters = append(step.Limiters, l)
		}
	}
	next := scanStep{match: w.match, cursor: r.cursor, read: r.small,
		count: int64(float64(r.dbSize) * w.share)}
	for _, k := range r.keys {
		if !known[k] {
			next.size = append(next.size, k)
		}
	}
	w.next = next
	s.Walk = step
	return s, nil
}

// scanStep is one page of the walk.
type scanStep struct {
	match  string   // SCAN MATCH ("" means "*")
	cursor uint64   // the previous page's cursor; 0 starts a pass
	count  int64    // SCAN COUNT, clamped to MinScanPage..MaxScanPage
	size   []string // keys to HLEN (a previous page's new keys)
	read   []string // keys to read and classify (a previous step's small)
}

// scanResult is what one scanStep found.
type scanResult struct {
	cursor   uint64   // the next step's cursor; 0 when this page ended a pass
	keys     []string // hashes this page listed, internal keys left out
	small    []string // size keys with 1..maxCandidateFields fields
	skipped  int      // size keys with more fields than any known layout
	locks    []LockInfo
	limiters []LimiterInfo
	dbSize   int64 // keys in the database, for sizing the next pages
}

// scanReads is a scanStep queued in a pipeline.
type scanReads struct {
	step   *scanStep
	scan   *redis.ScanCmd
	dbsize *redis.IntCmd
	lens   []*redis.IntCmd
	gets   []*redis.MapStringStringCmd
	ttls   []*redis.DurationCmd
}

func queueScan(ctx context.Context, pipe redis.Pipeliner, step *scanStep) *scanReads {
	match := step.match
	if match == "" {
		match = "*"
	}
	r := &scanReads{step: step,
		scan:   pipe.ScanType(ctx, step.cursor, match, min(max(step.count, MinScanPage), MaxScanPage), "hash"),
		dbsize: pipe.DBSize(ctx),
		lens:   make([]*redis.IntCmd, len(step.size)),
		gets:   make([]*redis.MapStringStringCmd, len(step.read)),
		ttls:   make([]*redis.DurationCmd, len(step.read)),
	}
	for i, k := range step.size {
		r.lens[i] = pipe.HLen(ctx, k)
	}
	for i, k := range step.read {
		r.gets[i] = pipe.HGetAll(ctx, k)
		r.ttls[i] = pipe.PTTL(ctx, k)
	}
	return r
}

// result classifies what the step read.
func (r *scanReads) result(nowMS int64) (*scanResult, error) {
	keys, cursor, err := r.scan.Result()
	if err != nil {
		return nil, err
	}
	out := &scanResult{cursor: cursor, dbSize: r.dbsize.Val()}
	for _, k := range keys {
		if !store.IsInternalKey(k) {
			out.keys = append(out.keys, k)
		}
	}
	out.small, out.skipped = smallHashes(r.step.size, r.lens)
	out.locks, out.limiters = classifyHashes(r.step.read, r.gets, r.ttls, nowMS)
	return out, nil
}
