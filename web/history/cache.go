package history

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/whatif"
)

// Cache keeps what the history's pages and API read from Redis, so that a
// viewer costs Redis nothing. Every history read ends at the newest sample
// the writer flushed (the meta key's "through"), once per 10 s step: what
// a read returns changes only when that flush time does. So entries are
// keyed by it; the first request after a flush reads again, and requests
// arriving meanwhile wait for that one read (singleflight) rather than
// sending their own. The audit trail, whose records are the charts'
// change markers, is read with the same flush time, and again after each
// change this console audits (gen moves on): an edit shows on the chart at
// once. Another replica's edits show from the next flush on. (A
// force-unlock's mark shows in a lock's holds once the writer has
// flushed it, so at a new flush time.)
type Cache struct {
	rec *Recorder
	// snapAt is the latest snapshot's Redis time (ms), 0 before the first.
	snapAt func() int64
	// audit reads the audit trail's newest records, newest first.
	audit func(ctx context.Context, n int) ([]inspect.AuditRecord, error)

	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	// sweep drops the idle entries, cacheIdle after the first entry
	// stored and again while any are left.
	sweep *time.Timer

	flights singleflight.Group
	// through is the newest flush time known, in Redis ms: the history's
	// own (its writer's, or what it read at its last step as a reader),
	// or a read of the meta key once the snapshots say the next step is due.
	through atomic.Int64
	polled  atomic.Int64 // wall ms of the last read of the meta key
	gen     atomic.Int64

	// whatIfs fits each limiter's demand once per flush and replays each
	// proposal once, a few at a time (WhatIf).
	whatIfs whatif.Runner
}

const (
	// cacheIdle: an entry no request asked for this long is dropped.
	cacheIdle = 3 * time.Minute
	// cacheMax bounds the entries (names come from URLs): at the cap,
	// the one asked for least recently goes. An entry is at most a day of
	// minutes (1,440 points, 46 kB) or a lock's kept holds.
	cacheMax = 256
	// flushPollEvery spaces the reads of the meta key while a flush is due
	// and not yet seen: from any number of requests, two a second.
	flushPollEvery = 500 * time.Millisecond
	// sharedReadTimeout bounds one shared read: it runs on after the request
	// that started it is gone, for the others waiting on it.
	sharedReadTimeout = 5 * time.Second
)

// What an entry holds.
const (
	entryLimiter   = 'l' // LimiterHistory of name over span
	entryLock      = 'k' // LockHistory of name over span
	entryContended = 'c' // the MostContended locks over span, name their number
	entryAudit     = 'a' // the audit trail's newest inspect.MaxAuditRead records
)

type cacheKey struct {
	what       byte
	name, span string
}

type cacheEntry struct {
	through, gen int64
	val          any
	used         int64 // wall ms of the last request it served
}

// ErrOff answers when the console keeps no history (--history-top 0).
var ErrOff = inspect.Errorf(inspect.CodeNotFound, "this console keeps no history (--history-top 0)")

// NewCache reads rec's History; snapAt is the latest snapshot's Redis
// time (ms, 0 before the first) and audit reads the audit trail's newest
// records, newest first.
func NewCache(rec *Recorder, snapAt func() int64, audit func(ctx context.Context, n int) ([]inspect.AuditRecord, error)) *Cache {
	return &Cache{rec: rec, snapAt: snapAt, audit: audit}
}

// Changed says this console audited a change: the audit trail is read
// again at the next request that shows it.
func (c *Cache) Changed() { c.gen.Add(1) }

// flushTime is the flush time to serve at. A reader replica learns of a
// flush at its own next step, which can be just before the writer's; so
// once the snapshot's Redis time snAt is past the step after the newest
// flush known, one request every flushPollEvery reads the meta key, and the
// others serve the flush known meanwhile.
func (c *Cache) flushTime(ctx context.Context, h *History, snAt int64) int64 {
	if f := h.Stats().LastFlush; !f.IsZero() {
		c.raise(f.UnixMilli())
	}
	t := c.through.Load()
	if snAt <= nextFlushDue(t) {
		return t
	}
	now, last := time.Now().UnixMilli(), c.polled.Load()
	if now-last < flushPollEvery.Milliseconds() || !c.polled.CompareAndSwap(last, now) {
		return t
	}
	// A failed read leaves the last flush known: the reads that follow
	// report what is wrong with Redis.
	if f, err := h.Flushed(ctx); err == nil && !f.IsZero() {
		c.raise(f.UnixMilli())
	}
	return c.through.Load()
}

// nextFlushDue is when the writer flushes next after a flush at t (ms):
// at its first sample past the end of t's step (worker.go).
func nextFlushDue(t int64) int64 {
	if t <= 0 {
		return 0
	}
	step := FineStep.Milliseconds()
	return ((t-1)/step + 1) * step
}

func (c *Cache) raise(t int64) {
	for {
		cur := c.through.Load()
		if t <= cur || c.through.CompareAndSwap(cur, t) {
			return
		}
	}
}

// cached is k's value read at flush time through and generation gen:
// from the cache, or read by one request for all those asking at once.
func cached[V any](ctx context.Context, c *Cache, k cacheKey, through, gen int64,
	read func(context.Context) (V, error)) (V, error) {
	var zero V
	if v, ok := c.lookup(k, through, gen); ok {
		return v.(V), nil
	}
	flight := fmt.Sprintf("%c\x00%s\x00%s\x00%d\x00%d", k.what, k.span, k.name, through, gen)
	ch := c.flights.DoChan(flight, func() (any, error) {
		// A read that ended between the lookup above and this flight
		// stored what this one would read.
		if v, ok := c.lookup(k, through, gen); ok {
			return v, nil
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedReadTimeout)
		defer cancel()
		v, err := read(rctx)
		if err != nil {
			return nil, err
		}
		c.store(k, &cacheEntry{through: through, gen: gen, val: v, used: time.Now().UnixMilli()})
		return v, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return zero, r.Err
		}
		return r.Val.(V), nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// lookup is k's value if it was read at through and gen.
func (c *Cache) lookup(k cacheKey, through, gen int64) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[k]
	if e == nil || e.through != through || e.gen != gen {
		return nil, false
	}
	e.used = time.Now().UnixMilli()
	return e.val, true
}

// store keeps e under k unless a newer read is there already; at
// cacheMax the entry asked for least recently goes.
func (c *Cache) store(k cacheKey, e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[cacheKey]*cacheEntry{}
	}
	if old := c.entries[k]; old != nil && (old.through > e.through || old.through == e.through && old.gen > e.gen) {
		return
	}
	if c.sweep == nil {
		c.sweep = time.AfterFunc(cacheIdle, c.dropIdle)
	}
	if _, ok := c.entries[k]; !ok && len(c.entries) >= cacheMax {
		var lru cacheKey
		oldest := int64(-1)
		for key, old := range c.entries {
			if oldest < 0 || old.used < oldest {
				lru, oldest = key, old.used
			}
		}
		delete(c.entries, lru)
	}
	c.entries[k] = e
}

// dropIdle drops the entries no request asked for in cacheIdle.
func (c *Cache) dropIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now().UnixMilli()
	for key, e := range c.entries {
		if now-e.used >= cacheIdle.Milliseconds() {
			delete(c.entries, key)
		}
	}
	if len(c.entries) > 0 {
		c.sweep.Reset(cacheIdle)
	} else {
		c.sweep = nil
	}
}

// at is the running history and the flush time its reads are served at;
// ErrOff when there is none.
func (c *Cache) at(ctx context.Context) (*History, int64, error) {
	h := c.rec.History()
	if h == nil {
		return nil, 0, ErrOff
	}
	return h, c.flushTime(ctx, h, c.snapAt()), nil
}

// Limiter is h.Limiter(name, span) at the flush time now, and that time.
// The value is shared: callers do not change it.
func (c *Cache) Limiter(ctx context.Context, name, span string) (LimiterHistory, int64, error) {
	h, through, err := c.at(ctx)
	if err != nil {
		return LimiterHistory{}, 0, err
	}
	lh, err := cached(ctx, c, cacheKey{entryLimiter, name, span}, through, 0,
		func(ctx context.Context) (LimiterHistory, error) { return h.Limiter(ctx, name, span) })
	return lh, through, err
}

// Lock is h.Lock(name, span) at the flush time now, and that time.
// Shared, as Limiter's.
func (c *Cache) Lock(ctx context.Context, name, span string) (LockHistory, int64, error) {
	h, through, err := c.at(ctx)
	if err != nil {
		return LockHistory{}, 0, err
	}
	lh, err := cached(ctx, c, cacheKey{entryLock, name, span}, through, 0,
		func(ctx context.Context) (LockHistory, error) { return h.Lock(ctx, name, span) })
	return lh, through, err
}

// MostContended is h.MostContended(n, span) at the flush time now.
func (c *Cache) MostContended(ctx context.Context, n int, span string) ([]LockWaits, error) {
	h, through, err := c.at(ctx)
	if err != nil {
		return nil, err
	}
	return cached(ctx, c, cacheKey{entryContended, strconv.Itoa(n), span}, through, 0,
		func(ctx context.Context) ([]LockWaits, error) { return h.MostContended(ctx, n, span) })
}

// WhatIf replays l's last hour of recorded demand at the proposed
// settings, which the limiter's kind checks (CodeInvalid naming the field
// it refuses): the hour's 10 s steps (the chart's, read once per flush)
// and, where it still holds them, fine's 200 ms stats buckets (read once
// per flush too, by the first what-if after it). The demand is fitted
// once per flush and each proposal replayed once, at most a few at a
// time: a request beyond those waiting gets CodeLimited.
func (c *Cache) WhatIf(ctx context.Context, l *inspect.LimiterInfo, proposed whatif.Settings, fine func() whatif.Series) (*whatif.Result, error) {
	lh, through, err := c.Limiter(ctx, l.Name, SpanHour)
	if err != nil {
		return nil, err
	}
	key := whatif.Key{Name: l.Name, Through: through, Limiter: whatif.FromInfo(l)}
	var buckets whatif.Series
	if through <= 0 {
		// Nothing flushed yet: the buckets are all the demand, and the
		// answer holds until the next of them.
		buckets = fine()
		key.Through = -buckets.EndMS
	}
	return c.whatIfs.Replay(ctx, key, proposed, func(context.Context) (whatif.Series, whatif.Series, error) {
		demand := lh.Demand()
		if through > 0 {
			demand.EndMS = through
			buckets = fine()
		}
		return demand, buckets, nil
	})
}

// WhatIfStats says what the what-ifs cost: fits and replays computed,
// requests refused, slots taken.
func (c *Cache) WhatIfStats() whatif.RunnerStats { return c.whatIfs.Stats() }

// Changes are the records of the audit trail, as of flush time through,
// of the changes made to the object name since from by one of actions,
// oldest first. No upper bound: a change made after the newest flushed
// step (since the last flush) is in the span all the same, and a chart
// draws it at its right edge, now.
func (c *Cache) Changes(ctx context.Context, name string, from time.Time, through int64, actions ...string) ([]inspect.AuditRecord, error) {
	recs, err := c.Audit(ctx, through)
	if err != nil {
		return nil, err
	}
	out := []inspect.AuditRecord{}
	for _, r := range slices.Backward(recs) {
		if r.Target == name && r.Outcome == inspect.OutcomeOK && slices.Contains(actions, r.Action) && !r.Time.Before(from) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Audit is the audit trail's newest inspect.MaxAuditRead records (newest
// first) as of flush time through, read once per flush and after each
// change this console audits (Changed).
func (c *Cache) Audit(ctx context.Context, through int64) ([]inspect.AuditRecord, error) {
	return cached(ctx, c, cacheKey{what: entryAudit}, through, c.gen.Load(),
		func(ctx context.Context) ([]inspect.AuditRecord, error) { return c.audit(ctx, inspect.MaxAuditRead) })
}
