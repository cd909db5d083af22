package faulttest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// The checker's clock is the test process's monotonic clock (time.Now
// carries a monotonic reading, and Sub uses it): every worker runs in this
// process, so one clock orders all grants and releases without Redis TIME
// round trips, which the faults would delay.

// grant is one holding as its worker saw it. Redis ran the acquire
// somewhere in [called, granted] and the release after release: a worker
// that the scheduler leaves waiting (a loaded machine, -race) sees its
// reply late, so granted may come long after the hold began in Redis, and
// the lease may already have run out by then.
type grant struct {
	holder  string
	shared  bool          // read side: may overlap other shared grants
	called  time.Time     // before the Lock call
	granted time.Time     // Lock returned nil
	release time.Time     // before the Unlock call
	lease   time.Duration // the lease set by the acquire
	token   int64         // fencing token, 0 when the kind has none
}

// checker collects grants from every worker.
type checker struct {
	mu     sync.Mutex
	grants []grant
	kills  []time.Time // Redis killed (restart without persistence)
}

// killed records that Redis lost every key at t.
func (c *checker) killed(t time.Time) {
	c.mu.Lock()
	c.kills = append(c.kills, t)
	c.mu.Unlock()
}

// heldUntil is the end of the span in which g's hold is certain: it
// began by granted and lasts until the release was sent, unless its lease
// ran out first (at the earliest a lease after the call: renewals are not
// counted on, since a starved process renews late) or Redis lost it.
func (c *checker) heldUntil(g grant) time.Time {
	end := g.release
	if exp := g.called.Add(g.lease); exp.Before(end) {
		end = exp
	}
	for _, k := range c.kills {
		if !k.Before(g.called) && k.Before(end) {
			end = k
		}
	}
	return end
}

// killedBetween says whether Redis lost its data between a and b.
func (c *checker) killedBetween(a, b time.Time) bool {
	for _, k := range c.kills {
		if k.After(a) && k.Before(b) {
			return true
		}
	}
	return false
}

func (c *checker) record(g grant) {
	c.mu.Lock()
	c.grants = append(c.grants, g)
	c.mu.Unlock()
}

// verdict is what the checker found.
type verdict struct {
	grants     int
	violations []string // two holders certainly at once
	leaseOut   []string // overlaps as the workers saw them that a lease running out (or Redis losing the key) explains
	tokens     []string // fencing tokens that did not increase
	tokenReset []string // ... across a restart that lost the token key
}

// check compares every pair of grants of different holders whose
// [granted, release] intervals, as their workers saw them, overlap. Two
// holds certainly overlapped when both had begun (the later grant) before
// either certainly ended (heldUntil): a double grant. Any other overlap a
// lease running out explains: the earlier holder, or the later one's
// acquire, may have been left waiting by the scheduler past a lease.
func (c *checker) check() verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	gs := append([]grant(nil), c.grants...)
	sort.Slice(gs, func(i, j int) bool { return gs[i].granted.Before(gs[j].granted) })
	v := verdict{grants: len(gs)}
	for i := range gs {
		a := gs[i]
		for j := i + 1; j < len(gs) && gs[j].granted.Before(a.release); j++ {
			b := gs[j]
			if a.holder == b.holder || (a.shared && b.shared) {
				continue
			}
			msg := fmt.Sprintf("%s (called %s, granted %s, released %s) and %s (called %s, granted %s)",
				a.holder, a.called.Format(time.StampMicro), a.granted.Format(time.StampMicro), a.release.Format(time.StampMicro),
				b.holder, b.called.Format(time.StampMicro), b.granted.Format(time.StampMicro))
			if b.granted.Before(c.heldUntil(a)) && b.granted.Before(c.heldUntil(b)) {
				v.violations = append(v.violations, msg)
			} else {
				v.leaseOut = append(v.leaseOut, msg)
			}
		}
	}
	// Grants of one lock are serial unless shared, so in grant order each
	// exclusive grant's token exceeds every earlier one's.
	var last grant
	for _, g := range gs {
		if g.token == 0 {
			continue
		}
		if g.token <= last.token {
			msg := fmt.Sprintf("%s got token %d after %s got %d", g.holder, g.token, last.holder, last.token)
			if c.killedBetween(last.granted, g.granted) {
				v.tokenReset = append(v.tokenReset, msg)
			} else {
				v.tokens = append(v.tokens, msg)
			}
		}
		last = g
	}
	return v
}

// admission is one limiter decision that granted a permit: it happened in
// Redis somewhere between start and end.
type admission struct{ start, end time.Time }

// windowExcess returns a description of the worst 1 s window if it admitted
// more than bound, else "". Only admissions whose whole call lies inside a
// window are counted in it, so reply delays cannot invent an excess.
func windowExcess(as []admission, bound int) string {
	sort.Slice(as, func(i, j int) bool { return as[i].start.Before(as[j].start) })
	worst, at := 0, time.Time{}
	for i, a := range as {
		end := a.start.Add(time.Second)
		n := 0
		for _, b := range as[i:] {
			if b.start.After(end) {
				break
			}
			if !b.end.After(end) {
				n++
			}
		}
		if n > worst {
			worst, at = n, a.start
		}
	}
	if worst > bound {
		return fmt.Sprintf("%d admissions in the second from %s (bound %d)", worst, at.Format(time.StampMicro), bound)
	}
	return ""
}

// matrix is the kind × fault table the test logs.
type matrix struct {
	mu   sync.Mutex
	rows []string
}

// add records a case's row: held unless the case failed, the heads of its
// failures ("<head>: ...") then leading the detail.
func (m *matrix) add(kind, fault string, failed []string, detail string) {
	held := "yes"
	if len(failed) > 0 {
		held = "NO"
		var heads []string
		for _, s := range failed {
			heads = append(heads, s[:strings.Index(s, ":")])
		}
		detail = strings.Join(heads, "+") + "; " + detail
	}
	m.mu.Lock()
	m.rows = append(m.rows, fmt.Sprintf("| %-8s | %-13s | %-6s | %s |", kind, fault, held, detail))
	m.mu.Unlock()
}

func (m *matrix) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	rows := append([]string(nil), m.rows...)
	sort.Strings(rows)
	return "\n| kind     | fault         | held   | detail |\n|---|---|---|---|\n" + strings.Join(rows, "\n")
}
