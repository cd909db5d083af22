package web

import (
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// rejectSpan is what limiter-reject-ratio judges: rejected over attempted
// in the last 10 s. A per-second ratio that had to stay over the threshold
// for 10 s never fired on bursty traffic (one calm second reset it), which
// is what a flooded login limiter looks like.
const rejectSpan = 10 * time.Second

// rejectSpans keeps, per limiter, disjoint 1 s windows taken at least a
// second apart, enough to add up the last rejectSpan.
type rejectSpans struct {
	mu     sync.Mutex
	byName map[string][]spanWindow // oldest first
}

type spanWindow struct {
	at time.Time
	w  inspect.Counts
}

// observe records name's 1 s window at now (unless the last one recorded
// is less than a second old, so windows do not overlap) and returns the
// sum over the last rejectSpan, and whether the windows kept cover it.
func (r *rejectSpans) observe(name string, now time.Time, w inspect.Counts) (inspect.Counts, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byName == nil {
		r.byName = make(map[string][]spanWindow)
	}
	ws := r.byName[name]
	if n := len(ws); n == 0 || now.Sub(ws[n-1].at) >= time.Second {
		ws = append(ws, spanWindow{now, w})
	}
	// Each window covers the second before its time: keep the ones that
	// end within the span.
	for len(ws) > 0 && now.Sub(ws[0].at) > rejectSpan-time.Second {
		ws = ws[1:]
	}
	r.byName[name] = ws
	var sum inspect.Counts
	for _, x := range ws {
		sum.Acquired += x.w.Acquired
		sum.Rejected += x.w.Rejected
		sum.Errors += x.w.Errors
	}
	covered := len(ws) > 0 && now.Sub(ws[0].at) >= rejectSpan-2*time.Second
	return sum, covered
}

// retain forgets limiters that are gone.
func (r *rejectSpans) retain(names map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.byName {
		if !names[name] {
			delete(r.byName, name)
		}
	}
}
