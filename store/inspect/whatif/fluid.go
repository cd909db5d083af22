package whatif

import (
	"math"
	"slices"
)

// The fluid models: the same algorithms with attempts arriving at an even
// rate over their run's span, decided in closed form per run rather than
// per attempt, so a step costs the same whatever its attempts (see the
// package doc, Cost). Time is in milliseconds as float64 since the
// demand began (absolute Unix milliseconds would leave a float64 a
// resolution of a quarter of a microsecond, too coarse to step through).

// fluidBucket is tokenbucket_acquire.lua's bucket with permits refilling
// continuously at 1/interval a millisecond up to max. Over a long run it
// admits what the script does (one permit per whole interval elapsed); it
// does not see that an attempt needs a whole permit.
type fluidBucket struct {
	max, rate float64 // permits, permits per ms
	b, at     float64 // permits stored at time at
	origin    int64
}

func (m *fluidBucket) begin(ms int64) { m.b, m.at, m.origin = m.max, 0, ms }

func (m *fluidBucket) copy() model { c := *m; return &c }

func (m *fluidBucket) admit(a arrivals) float64 {
	t0, d, n := float64(a.start-m.origin), float64(a.width), float64(a.n)
	if t0 > m.at {
		m.b = min(m.max, m.b+(t0-m.at)*m.rate)
	}
	m.at = t0 + d
	lam := n / d
	if lam <= m.rate {
		m.b = min(m.max, m.b+(m.rate-lam)*d)
		return n
	}
	if drain := (lam - m.rate) * d; drain <= m.b {
		m.b -= drain
		return n
	}
	// Empty after tau: from then on the attempts get the refill.
	tau := m.b / (lam - m.rate)
	m.b = 0
	return lam*tau + m.rate*(d-tau)
}

// fluidWindow is the fixed window (fixedWindow) decided window by window
// while a run of attempts opens few windows (maxWindows), as their
// openings decide which step later windows open in. Past that, a run's
// attempts are taken at start + (j+0.5)·gap, as the discrete arrivals
// without their rounding to whole milliseconds: a window opened by
// attempt j then holds the ceil((window+1)/gap) attempts from it on, and
// the run's windows follow each other every that many attempts, in
// closed form.
type fluidWindow struct{ fixedWindow }

// maxWindows is the most windows a run is decided window by window.
const maxWindows = 64

func (m *fluidWindow) copy() model { c := *m; return &c }

func (m *fluidWindow) admit(a arrivals) float64 {
	if a.width/(m.window+1) < maxWindows {
		return float64(m.step(a))
	}
	var got, j int64
	if m.open {
		if j = a.from(m.end + 1); j > 0 {
			took := min(j, m.limit-m.count)
			got, m.count = took, m.count+took
		}
	}
	if j >= a.n {
		return float64(got)
	}
	per := int64(math.Ceil(float64(m.window+1) * float64(a.n) / float64(a.width)))
	full, rest := (a.n-j)/per, (a.n-j)%per
	if rest == 0 {
		full, rest = full-1, per
	}
	last := j + full*per // the attempt that opens the window open when the run ends
	got += full*min(m.limit, per) + min(m.limit, rest)
	m.open, m.end, m.count = true, a.at(last)+m.window, min(m.limit, rest)
	return float64(got)
}

// fluidSliding is redisson_limiter_acquire's "sliding" branch: grants, a
// grant at t returned once now >= t + window, attempts admitted while fewer
// than rate permits are out. Grants are kept as runs spread evenly over a
// span.
type fluidSliding struct {
	rate, window float64
	runs         []grantRun // by time; runs[head:] are out
	head         int
	out          float64 // permits in runs[head:]
	origin       int64
}

// grantRun is amt grants spread evenly over [t0, t1).
type grantRun struct{ t0, t1, amt float64 }

func (g grantRun) density() float64 { return g.amt / (g.t1 - g.t0) }

// maxRuns bounds the runs kept: past it the two oldest are merged into one
// even run over both spans, which moves when some of their grants return
// but not how many.
const maxRuns = 256

func (m *fluidSliding) begin(ms int64) { m.runs, m.head, m.out, m.origin = m.runs[:0], 0, 0, ms }

func (m *fluidSliding) copy() model {
	c := *m
	c.runs, c.head = slices.Clone(m.runs[m.head:]), 0
	return &c
}

// expire returns the grants made at or before now - window.
func (m *fluidSliding) expire(now float64) {
	cut := now - m.window
	for m.head < len(m.runs) {
		r := &m.runs[m.head]
		if r.t1 <= cut {
			m.out -= r.amt
			m.head++
			continue
		}
		if r.t0 < cut {
			part := r.amt * (cut - r.t0) / (r.t1 - r.t0)
			r.amt -= part
			m.out -= part
			r.t0 = cut
		}
		break
	}
	if m.head == len(m.runs) || m.out < 0 {
		m.out = max(m.out, 0)
	}
	if m.head > 64 && m.head > len(m.runs)/2 {
		m.runs = m.runs[:copy(m.runs, m.runs[m.head:])]
		m.head = 0
	}
}

// grant adds amt grants over [t0, t1), joining the last run when they
// continue it at its density.
func (m *fluidSliding) grant(t0, t1, amt float64) {
	if amt <= 0 || t1 <= t0 {
		return
	}
	m.out += amt
	if n := len(m.runs); n > m.head {
		last := &m.runs[n-1]
		d := last.density()
		if last.t1 == t0 && math.Abs(d-amt/(t1-t0)) <= 1e-9*d {
			last.t1, last.amt = t1, last.amt+amt
			return
		}
	}
	m.runs = append(m.runs, grantRun{t0, t1, amt})
	if len(m.runs)-m.head > maxRuns {
		a, b := m.runs[m.head], m.runs[m.head+1]
		m.runs[m.head+1] = grantRun{a.t0, b.t1, a.amt + b.amt}
		m.head++
	}
}

func (m *fluidSliding) admit(a arrivals) float64 {
	t, stop := float64(a.start-m.origin), float64(a.start+a.width-m.origin)
	lam := float64(a.n) / float64(a.width)
	eps := 1e-9 * m.rate
	var got float64
	for t < stop {
		m.expire(t)
		// What a window of demand adds can never fill it: all admitted.
		if m.out+lam*min(m.window, stop-t) <= m.rate+eps {
			m.grant(t, stop, lam*(stop-t))
			return got + lam*(stop-t)
		}
		// r: the rate grants return at now, until the next change of it.
		r, until := 0.0, stop
		if m.head < len(m.runs) {
			h := m.runs[m.head]
			if h.t0 <= t-m.window {
				r, until = h.density(), min(stop, h.t1+m.window)
			} else {
				until = min(stop, h.t0+m.window)
			}
		}
		rate := lam
		if free := m.rate - m.out; free <= eps {
			if lam >= m.maxDensity() {
				// Full, and the attempts come at least as fast as any
				// grant out returns: each return is taken at once, so the
				// grants of the last window repeat every window.
				return got + m.repeat(t, stop)
			}
			rate = min(lam, r)
		} else if lam > r {
			until = min(until, t+free/(lam-r))
		}
		if until-t < 1e-6 {
			until = min(stop, t+1e-6) // float rounding must not stall the loop
		}
		m.grant(t, until, rate*(until-t))
		got += rate * (until - t)
		t = until
	}
	return got
}

// maxDensity is the densest run out.
func (m *fluidSliding) maxDensity() float64 {
	var d float64
	for _, r := range m.runs[m.head:] {
		d = max(d, r.density())
	}
	return d
}

// repeat runs a full window from t to stop in which every return is taken
// at once: the grants over (t-window, t] repeat every window. It returns
// the grants made, k whole windows' worth and the grants of the first rem
// milliseconds of the last window, and leaves the window at stop as that
// pattern rotated by rem.
func (m *fluidSliding) repeat(t, stop float64) float64 {
	k := math.Floor((stop - t) / m.window)
	rem := stop - t - k*m.window
	c := t - m.window + rem
	var before, after []grantRun
	var early float64
	for _, r := range m.runs[m.head:] {
		switch {
		case r.t1 <= c:
			before = append(before, r)
			early += r.amt
		case r.t0 >= c:
			after = append(after, r)
		default:
			part := r.amt * (c - r.t0) / (r.t1 - r.t0)
			before = append(before, grantRun{r.t0, c, part})
			after = append(after, grantRun{c, r.t1, r.amt - part})
			early += part
		}
	}
	runs := make([]grantRun, 0, len(before)+len(after))
	for _, r := range after {
		runs = append(runs, grantRun{r.t0 + k*m.window, r.t1 + k*m.window, r.amt})
	}
	for _, r := range before {
		runs = append(runs, grantRun{r.t0 + (k+1)*m.window, r.t1 + (k+1)*m.window, r.amt})
	}
	m.runs, m.head = runs, 0
	return k*m.out + early
}
