package store

import "sync"

// renewer counts the levels a RWLock or SpinLock handle holds and runs the
// handle's own renewal goroutine while it holds any. (The Client's
// watchdog, watchdog.go, renews only RLock-layout holds, in one goroutine
// per Client.)
type renewer struct {
	mu    sync.Mutex
	holds int
	stop  chan struct{} // closes the renewal goroutine; nil when none
}

// held counts a level and, on the first, starts loop, which must return
// once stop is closed. A nil loop only counts the level (a handle without
// watchdog).
func (r *renewer) held(loop func(stop chan struct{})) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holds++
	if loop != nil && r.stop == nil {
		r.stop = make(chan struct{})
		go loop(r.stop)
	}
}

// released gives back a level, and stops the renewal once none is left or
// the lock is gone.
func (r *renewer) released(gone bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holds > 0 {
		r.holds--
	}
	if (gone || r.holds == 0) && r.stop != nil {
		close(r.stop)
		r.stop, r.holds = nil, 0
	}
}

// releasedUncertain stops the renewal when the only level counted is the
// one an unanswered Unlock may have released, so the lock ends with its
// lease at the latest (the rule of Lock.releaseUnknown). The count stays:
// a later Unlock or acquire of the handle goes on from it, and held starts
// a new renewal.
func (r *renewer) releasedUncertain() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holds == 1 && r.stop != nil {
		close(r.stop)
		r.stop = nil
	}
}

// lost ends the renewal that stop belongs to, from its own goroutine, when
// the lock is gone: nothing is left to keep. A renewal already stopped (and
// perhaps started again) is left alone.
func (r *renewer) lost(stop chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop == stop {
		close(stop)
		r.stop, r.holds = nil, 0
	}
}

// count returns the levels counted.
func (r *renewer) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holds
}
