package web

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/history"
)

// histCache keeps what the history's pages and API read from Redis, so
// that a viewer costs Redis nothing (DESIGN: handlers read the latest
// snapshot). Every history read ends at the newest sample the writer
// flushed (web/history's meta key, "through"), once per 10 s step: what
// a read returns changes only when that flush time does. So entries are
// keyed by it; the first request after a flush reads again, and requests
// arriving meanwhile wait for that one read (singleflight) rather than
// sending their own. The audit trail, whose records are the charts'
// change markers, is read with the same flush time, and again after each
// change this console audits (gen moves on): an edit shows on the chart at
// once. Another replica's edits show from the next flush on. (A
// force-unlock's mark shows in a lock's holds once the writer has
// flushed it, so at a new flush time.)
type histCache struct {
	mu      sync.Mutex
	entries map[histKey]*histEntry
	// sweep drops the idle entries, histCacheIdle after the first entry
	// stored and again while any are left.
	sweep *time.Timer

	flights singleflight.Group
	// through is the newest flush time known, in Redis ms: the history's
	// own (its writer's, or what it read at its last step as a reader),
	// or a read of the meta key once the snapshots say the next step is due.
	through atomic.Int64
	polled  atomic.Int64 // wall ms of the last read of the meta key
	gen     atomic.Int64
}

const (
	// histCacheIdle: an entry no request asked for this long is dropped.
	histCacheIdle = 3 * time.Minute
	// histCacheMax bounds the entries (names come from URLs): at the cap,
	// the one asked for least recently goes. An entry is at most a day of
	// minutes (1,440 points, 46 kB) or a lock's kept holds.
	histCacheMax = 256
	// histPollEvery spaces the reads of the meta key while a flush is due
	// and not yet seen: from any number of requests, two a second.
	histPollEvery = 500 * time.Millisecond
	// histReadTimeout bounds one shared read: it runs on after the request
	// that started it is gone, for the others waiting on it.
	histReadTimeout = 5 * time.Second
)

// What an entry holds.
const (
	histLimiter   = 'l' // history.LimiterHistory of name over span
	histLock      = 'k' // history.LockHistory of name over span
	histContended = 'c' // the MostContended locks over span, name their number
	histAudit     = 'a' // the audit trail's newest inspect.MaxAuditRead records
)

type histKey struct {
	what       byte
	name, span string
}

type histEntry struct {
	through, gen int64
	val          any
	used         int64 // wall ms of the last request it served
}

// changed says this console audited a change: the audit trail is read
// again at the next request that shows it.
func (c *histCache) changed() { c.gen.Add(1) }

// flushTime is the flush time to serve at. A reader replica learns of a
// flush at its own next step, which can be just before the writer's; so
// once the snapshot's Redis time snAt is past the step after the newest
// flush known, one request every histPollEvery reads the meta key, and the
// others serve the flush known meanwhile.
func (c *histCache) flushTime(ctx context.Context, h *history.History, snAt int64) int64 {
	if f := h.Stats().LastFlush; !f.IsZero() {
		c.raise(f.UnixMilli())
	}
	t := c.through.Load()
	if snAt <= nextFlushDue(t) {
		return t
	}
	now, last := time.Now().UnixMilli(), c.polled.Load()
	if now-last < histPollEvery.Milliseconds() || !c.polled.CompareAndSwap(last, now) {
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
// at its first sample past the end of t's step (web/history's worker).
func nextFlushDue(t int64) int64 {
	if t <= 0 {
		return 0
	}
	step := history.FineStep.Milliseconds()
	return ((t-1)/step + 1) * step
}

func (c *histCache) raise(t int64) {
	for {
		cur := c.through.Load()
		if t <= cur || c.through.CompareAndSwap(cur, t) {
			return
		}
	}
}

// histGet is k's value read at flush time through and generation gen:
// from the cache, or read by one request for all those asking at once.
func histGet[V any](ctx context.Context, c *histCache, k histKey, through, gen int64,
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
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), histReadTimeout)
		defer cancel()
		v, err := read(rctx)
		if err != nil {
			return nil, err
		}
		c.store(k, &histEntry{through: through, gen: gen, val: v, used: time.Now().UnixMilli()})
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
func (c *histCache) lookup(k histKey, through, gen int64) (any, bool) {
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
// histCacheMax the entry asked for least recently goes.
func (c *histCache) store(k histKey, e *histEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[histKey]*histEntry{}
	}
	if old := c.entries[k]; old != nil && (old.through > e.through || old.through == e.through && old.gen > e.gen) {
		return
	}
	if c.sweep == nil {
		c.sweep = time.AfterFunc(histCacheIdle, c.dropIdle)
	}
	if _, ok := c.entries[k]; !ok && len(c.entries) >= histCacheMax {
		var lru histKey
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

// dropIdle drops the entries no request asked for in histCacheIdle.
func (c *histCache) dropIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now().UnixMilli()
	for key, e := range c.entries {
		if now-e.used >= histCacheIdle.Milliseconds() {
			delete(c.entries, key)
		}
	}
	if len(c.entries) > 0 {
		c.sweep.Reset(histCacheIdle)
	} else {
		c.sweep = nil
	}
}

// historyAt is the running history and the flush time its reads are
// served at.
func (s *Server) historyAt(ctx context.Context) (*history.History, int64, error) {
	h, err := s.history()
	if err != nil {
		return nil, 0, err
	}
	var at int64
	if sn := s.live.Latest(); sn != nil {
		at = sn.At
	}
	return h, s.hcache.flushTime(ctx, h, at), nil
}

// cachedLimiter is h.Limiter(name, span) at the flush time now, and that
// time. The value is shared: callers do not change it.
func (s *Server) cachedLimiter(ctx context.Context, name, span string) (history.LimiterHistory, int64, error) {
	h, through, err := s.historyAt(ctx)
	if err != nil {
		return history.LimiterHistory{}, 0, err
	}
	lh, err := histGet(ctx, &s.hcache, histKey{histLimiter, name, span}, through, 0,
		func(ctx context.Context) (history.LimiterHistory, error) { return h.Limiter(ctx, name, span) })
	return lh, through, err
}

// cachedLock is h.Lock(name, span) at the flush time now, and that time.
// Shared, as cachedLimiter's.
func (s *Server) cachedLock(ctx context.Context, name, span string) (history.LockHistory, int64, error) {
	h, through, err := s.historyAt(ctx)
	if err != nil {
		return history.LockHistory{}, 0, err
	}
	lh, err := histGet(ctx, &s.hcache, histKey{histLock, name, span}, through, 0,
		func(ctx context.Context) (history.LockHistory, error) { return h.Lock(ctx, name, span) })
	return lh, through, err
}

// cachedContended is h.MostContended(n, span) at the flush time now.
func (s *Server) cachedContended(ctx context.Context, n int, span string) ([]history.LockWaits, error) {
	h, through, err := s.historyAt(ctx)
	if err != nil {
		return nil, err
	}
	return histGet(ctx, &s.hcache, histKey{histContended, strconv.Itoa(n), span}, through, 0,
		func(ctx context.Context) ([]history.LockWaits, error) { return h.MostContended(ctx, n, span) })
}

// cachedAudit is the audit trail's newest records (newest first), read
// once per flush and after each change this console audits.
func (s *Server) cachedAudit(ctx context.Context, through int64) ([]inspect.AuditRecord, error) {
	return histGet(ctx, &s.hcache, histKey{what: histAudit}, through, s.hcache.gen.Load(),
		func(ctx context.Context) ([]inspect.AuditRecord, error) {
			return s.admin.Recent(ctx, inspect.MaxAuditRead)
		})
}
