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

// grant is one holding as its worker saw it.
type grant struct {
	holder  string
	shared  bool          // read side: may overlap other shared grants
	called  time.Time     // before the Lock call
	granted time.Time     // Lock returned nil
	release time.Time     // before the Unlock call
	lease   time.Duration // the lease set by each acquire or renewal
	renewed bool          // renewed while held (spin lock): runs out only if Redis loses it
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

// expiry is the latest g's lease can have ended: a fixed lease from when
// the grant was seen (the acquire ran somewhere in [called, granted], and a
// Lock that waited may have started long before; only the latest bound
// makes "lease ran out" certain); a renewed one a lease after Redis lost it
// (no renewal can extend a key that is gone), or never.
func (c *checker) expiry(g grant) (time.Time, bool) {
	if !g.renewed {
		return g.granted.Add(g.lease), true
	}
	for _, k := range c.kills {
		if !k.Before(g.granted) && k.Before(g.release) {
			return k.Add(g.lease), true
		}
	}
	return time.Time{}, false
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
	violations []string // two holders at once while both leases ran
	leaseOut   []string // overlaps after the earlier holder's lease ran out
	tokens     []string // fencing tokens that did not increase
	tokenReset []string // ... across a restart that lost the token key
}

// check compares every pair of grants of different holders whose
// [granted, release] intervals overlap.
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
			msg := fmt.Sprintf("%s (granted %s, released %s) and %s (granted %s)",
				a.holder, a.granted.Format(time.StampMicro), a.release.Format(time.StampMicro),
				b.holder, b.granted.Format(time.StampMicro))
			if exp, ok := c.expiry(a); ok && !b.granted.Before(exp) {
				v.leaseOut = append(v.leaseOut, msg)
			} else {
				v.violations = append(v.violations, msg)
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
