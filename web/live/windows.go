package live

import (
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// windowTicks is how many window summaries the console keeps per limiter:
// 900 steps of 200 ms are three minutes, enough for a 60 s sparkline and
// the rolling table with room to spare.
const windowTicks = 900

// WindowPoint is one window summary: the 1 s window ending at At (epoch
// ms) and the newest bucket on its own.
type WindowPoint struct {
	At     int64
	Window inspect.Counts
	Newest inspect.Counts
}

// ring is a fixed-size buffer of points, oldest overwritten first.
type ring struct {
	buf  []WindowPoint
	next int
	full bool
}

func (r *ring) push(p WindowPoint) {
	if n := r.len(); n > 0 && r.at(0).At == p.At {
		// Ticks faster than a bucket see the same window again.
		r.buf[(r.next-1+len(r.buf))%len(r.buf)] = p
		return
	}
	r.buf[r.next] = p
	r.next = (r.next + 1) % len(r.buf)
	if r.next == 0 {
		r.full = true
	}
}

func (r *ring) len() int {
	if r.full {
		return len(r.buf)
	}
	return r.next
}

// at returns the i-th newest WindowPoint (0 is the newest).
func (r *ring) at(i int) WindowPoint {
	return r.buf[(r.next-1-i+2*len(r.buf))%len(r.buf)]
}

// Windows holds the last few minutes of window summaries per limiter, in
// memory (the history kept in Redis is web/history's). The sampler writes
// it once per tick; pages and the alert rules read it.
type Windows struct {
	mu     sync.RWMutex
	size   int
	byName map[string]*ring
	// buckets are each limiter's complete stats buckets (buckets.go).
	buckets map[string]*bucketRing
}

func newWindows(size int) *Windows {
	return &Windows{size: size, byName: make(map[string]*ring)}
}

// PushTick records one tick's window of every limiter (the sampler's
// write, once per tick) under one lock: at 1,000 limiters, a lock per
// limiter was a tenth of the tick's work.
func (h *Windows) PushTick(at int64, lims []inspect.LimiterInfo, stats map[string]inspect.Summary) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range lims {
		if l.Stale != nil {
			continue // its node did not answer: no new WindowPoint, the numbers are old
		}
		r := h.byName[l.Name]
		if r == nil {
			r = &ring{buf: make([]WindowPoint, h.size)}
			h.byName[l.Name] = r
		}
		st := stats[l.Name]
		r.push(WindowPoint{At: at, Window: st.Window, Newest: st.Newest})
		h.pushBuckets(l, st)
	}
}

// retain forgets limiters that are no longer discovered.
func (h *Windows) retain(names map[string]bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name := range h.byName {
		if !names[name] {
			delete(h.byName, name)
			delete(h.buckets, name)
		}
	}
}

// SumSpan adds up name's 1 s windows ending within span of its newest
// WindowPoint, one window per second (points are a tick apart, so neighbouring
// windows overlap and only every fifth or so is taken), and says whether
// they reach back the whole span.
func (h *Windows) SumSpan(name string, span time.Duration) (inspect.Counts, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	r := h.byName[name]
	if r == nil || r.len() == 0 {
		return inspect.Counts{}, false
	}
	const windowMS = 1000
	newest, reach := r.at(0).At, span.Milliseconds()-windowMS
	oldest, next := newest, newest
	var sum inspect.Counts
	for i := 0; i < r.len(); i++ {
		p := r.at(i)
		if newest-p.At > reach {
			break
		}
		if p.At > next {
			continue // overlaps the window taken last
		}
		sum.Acquired += p.Window.Acquired
		sum.Rejected += p.Window.Rejected
		sum.Errors += p.Window.Errors
		oldest, next = p.At, p.At-windowMS
	}
	return sum, newest-oldest >= reach-windowMS
}

// Recent returns up to n points of name, newest first.
func (h *Windows) Recent(name string, n int) []WindowPoint {
	h.mu.RLock()
	defer h.mu.RUnlock()
	r := h.byName[name]
	if r == nil {
		return nil
	}
	n = min(n, r.len())
	out := make([]WindowPoint, n)
	for i := range out {
		out[i] = r.at(i)
	}
	return out
}

// Spark returns up to n windows spaced at least stepMS apart, oldest first,
// so consecutive sparkline points cover distinct seconds.
func (h *Windows) Spark(name string, n int, stepMS int64) []inspect.Counts {
	h.mu.RLock()
	defer h.mu.RUnlock()
	r := h.byName[name]
	if r == nil {
		return nil
	}
	picked := make([]inspect.Counts, 0, n)
	var last int64
	for i := 0; i < r.len() && len(picked) < n; i++ {
		p := r.at(i)
		if len(picked) > 0 && last-p.At < stepMS {
			continue
		}
		picked = append(picked, p.Window)
		last = p.At
	}
	for i, j := 0, len(picked)-1; i < j; i, j = i+1, j-1 {
		picked[i], picked[j] = picked[j], picked[i]
	}
	return picked
}
