package faulttest

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// progress watches one case for its fault to happen and counts the work
// (increments, admissions) done from then on: under every fault, a lock
// must keep granting and a limiter keep admitting once the fault has
// happened, or the row fails.
type progress struct {
	applied func(e *env) bool
	e       *env
	none    bool // the fault-free row: nothing to wait for

	mu    sync.Mutex
	hit   bool
	base  int64 // work done when the fault was first seen applied
	start time.Time
}

// poll records when the fault is first seen applied and returns the work
// done since then (0 before).
func (p *progress) poll(done int64) (bool, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.hit && p.applied(p.e) {
		p.hit, p.base = true, done
	}
	if !p.hit {
		return false, 0
	}
	return true, done - p.base
}

// watch polls until the case has run at least run and made floor units of
// work since the fault happened, then calls stop; it returns early when
// ctx ends (the case's budget, which then decides). The case's length is
// set by these events, not by a fixed sleep: a slow machine gets longer
// (up to the budget) instead of a false failure.
func (p *progress) watch(ctx context.Context, stop func(), run time.Duration, floor int64, done func() int64) {
	p.mu.Lock()
	p.start = time.Now()
	p.mu.Unlock()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		hit, since := p.poll(done())
		if hit && since >= floor && time.Since(p.start) >= run {
			stop()
			return
		}
	}
}

// check adds a failure when the fault never happened or too little work
// followed it.
func (p *progress) check(fl *failures, what string, floor, done int64) {
	switch hit, since := p.poll(done); {
	case !hit:
		fl.add("setup: the fault never happened in the run")
	case since < floor:
		fl.add("progress: %d %s after the fault happened, want at least %d", since, what, floor)
	}
}

// since says the work done since the fault happened, for the matrix; ""
// for the fault-free row.
func (p *progress) since(done int64) string {
	if p.none {
		return ""
	}
	if hit, n := p.poll(done); hit {
		return fmt.Sprintf(" (%d after the fault)", n)
	}
	return " (the fault never happened)"
}
