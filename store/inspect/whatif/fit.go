package whatif

import (
	"errors"
	"math"
	"time"
)

// step is one step of demand on the replay's clock.
type step struct {
	start, width int64 // what happened in [start, start+width), Unix ms
	t            int64 // where it counts in the output points (its T)
	n, acquired  int64 // attempts, of which admitted
	fine         bool  // a stats bucket, not a history step
	// tol is how far the replay at today's settings may be off acquired
	// and still fit: half a rounding, and half what moving an edge by
	// Series.EdgeMS moves of the step's smaller outcome (so that the
	// steps' slack adds up to at most half that share of the rejections).
	tol float64
}

// steps turns s into steps on the replay's clock.
func (s Series) steps(fine bool) []step {
	out := make([]step, 0, len(s.Points))
	for i, p := range s.Points {
		t := p.T.UnixMilli()
		w := s.StepMS
		if i == len(s.Points)-1 && s.EndMS != 0 {
			w = min(w, s.EndMS-t)
		}
		st := step{start: t - s.LagMS, width: w, t: t, n: p.Acquired + p.Rejected, acquired: p.Acquired, fine: fine}
		st.tol = 0.5 + float64(s.EdgeMS)/float64(2*s.StepMS)*float64(min(p.Acquired, p.Rejected))
		out = append(out, st)
	}
	return out
}

// bounds are the time s covers on the replay's clock; ok is false when it
// says nothing of it (no point, no FromMS or EndMS).
func (s Series) bounds() (from, end int64, ok bool) {
	n := len(s.Points)
	switch {
	case s.FromMS != 0:
		from = s.FromMS
	case n > 0:
		from = s.Points[0].T.UnixMilli()
	}
	switch {
	case s.EndMS != 0:
		end = s.EndMS
	case n > 0:
		end = s.Points[n-1].T.UnixMilli() + s.StepMS
	}
	if (s.FromMS == 0 || s.EndMS == 0) && n == 0 {
		return 0, 0, false
	}
	return from - s.LagMS, end - s.LagMS, true
}

// splice is d's steps with fine's in place of what fine covers, to the
// end of fine and no further than d's end (so the answer stays the one of
// d's last flush). The step of d that fine begins in keeps what fine does
// not hold of it, over the time before fine, when its counts allow (they
// are the same buckets, counted a tick later); else fine begins after it.
func splice(d, fine Series) []step {
	coarse := d.steps(false)
	cut, fEnd, ok := fine.bounds()
	if !ok {
		return coarse
	}
	if _, dEnd, dOK := d.bounds(); dOK {
		fEnd = min(fEnd, dEnd)
	}
	if cut >= fEnd {
		return coarse
	}
	fineSteps := fine.steps(true)
	out := make([]step, 0, len(coarse)+len(fineSteps))
	for _, s := range coarse {
		switch end := s.start + s.width; {
		case end <= cut:
			out = append(out, s)
		case s.start < cut:
			rest := s
			rest.width = cut - s.start
			for _, f := range fineSteps {
				if f.start >= cut && f.start < end {
					rest.n -= f.n
					rest.acquired -= f.acquired
				}
			}
			switch {
			case rest.acquired < 0 || rest.n < rest.acquired:
				out = append(out, s)
				cut = end
			case rest.n > 0:
				out = append(out, rest)
			}
		}
	}
	for _, s := range fineSteps {
		if s.start >= cut && s.start < fEnd {
			s.width = min(s.width, fEnd-s.start)
			out = append(out, s)
		}
	}
	for _, s := range coarse {
		if s.start >= fEnd {
			out = append(out, s)
		}
	}
	return out
}

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}

// The arrival models (see the package doc): a step's attempts bunched
// into the last or the first fraction of it, the loosest bunching that
// fits what today's settings did or the tightest; and the model that
// gives the answer, which picks per step the end or the start by what lets
// the next step fit.
const (
	looseEnd = iota
	looseStart
	tightEnd
	tightStart
	chosen
	models
)

// A bunching is a step's arrivals: its attempts came in the fraction |b|
// of it, at its end when b > 0, at its start when b < 0; 1 is evenly
// spread.
type bunching = float64

// shape is the arrivals of s under b, in whole milliseconds (at least one).
func (s step) shape(b bunching) arrivals {
	if b >= 1 || b <= -1 {
		return arrivals{start: s.start, width: s.width, n: s.n}
	}
	w := min(s.width, max(1, int64(math.Round(math.Abs(b)*float64(s.width)))))
	if b > 0 {
		return arrivals{start: s.start + s.width - w, width: w, n: s.n}
	}
	return arrivals{start: s.start, width: w, n: s.n}
}

// fractions are the bunchings the fit tries, evenly spread first; the
// loose fit then narrows down between two neighbours by halving.
var fractions = []float64{1, .95, .9, .85, .8, .7, .6, .5, .4, .3, .2, .15, .1, .07, .05, .03, .02, .01, .005, .002, .001}

const halvings = 10

// fitted is one step's bunching, the state it leaves and how far from
// what was recorded it admits.
type fitted struct {
	b    bunching
	next model
	err  float64
}

// fitStep fits s's attempts, from state m, at the end (sign 1) or the
// start (-1): the largest fraction that makes m (today's settings) admit
// what was recorded within the step's tolerance, or with tight the
// smallest of those next to it on the grid; else the one that comes
// closest.
func fitStep(m model, s step, sign float64, tight bool) fitted {
	try := func(f float64) fitted {
		c := m.copy()
		return fitted{b: sign * f, next: c, err: c.admit(s.shape(sign*f)) - float64(s.acquired)}
	}
	fits := func(r fitted) bool { return math.Abs(r.err) <= s.tol }
	even := try(1)
	if s.n == 0 || fits(even) && !tight {
		return even
	}
	tries := []fitted{even}
	first, last, best := -1, -1, 0
	if fits(even) {
		first, last = 0, 0
	}
	for k := 1; k < len(fractions) && (last < 0 || last == k-1); k++ {
		r := try(fractions[k])
		tries = append(tries, r)
		if math.Abs(r.err) < math.Abs(tries[best].err) {
			best = k
		}
		if !fits(r) {
			continue
		}
		if first < 0 {
			first = k
			if !tight {
				break
			}
		}
		last = k
	}
	switch {
	case tight && last >= 0:
		return tries[last]
	case first > 0:
		// The largest fraction that fits lies between the one that does
		// and its neighbour that does not.
		lo, hi := tries[first], fractions[first-1]
		for range halvings {
			mid := (math.Abs(lo.b) + hi) / 2
			if r := try(mid); fits(r) {
				lo = r
			} else {
				hi = mid
			}
		}
		return lo
	case best > 0 && best+1 < len(tries) && (tries[best].err > 0) != (tries[best+1].err > 0):
		return bisect(try, tries[best+1], tries[best])
	case best > 0 && (tries[best].err > 0) != (tries[best-1].err > 0):
		return bisect(try, tries[best], tries[best-1])
	}
	return tries[best]
}

// fit returns each step's bunching under one arrival model, each fitted
// from the state the steps before left.
func fit(m model, steps []step, which int) []bunching {
	bs := make([]bunching, len(steps))
	if len(steps) == 0 {
		return bs
	}
	m.begin(steps[0].start)
	for i, s := range steps {
		if which == chosen {
			r := choose(m, steps[i:])
			bs[i], m = r.b, r.next
			continue
		}
		sign := 1.0
		if which == looseStart || which == tightStart {
			sign = -1
		}
		r := fitStep(m, s, sign, which >= tightEnd)
		bs[i], m = r.b, r.next
	}
	return bs
}

// choose fits steps[0] for the chosen model: the loose fit at its end
// unless the next step then fits worse than after another of the fits
// (at the start, or tight), as when the attempts of a step stopped before
// its end and the limiter had recovered when the next began.
func choose(m model, steps []step) fitted {
	s := steps[0]
	def := fitStep(m, s, 1, false)
	if len(steps) == 1 || steps[1].n == 0 || steps[1].start > s.start+s.width {
		return def
	}
	nextErr := func(r fitted) float64 {
		return min(math.Abs(fitStep(r.next, steps[1], 1, false).err), math.Abs(fitStep(r.next, steps[1], -1, false).err))
	}
	best, bestErr := def, nextErr(def)
	if bestErr <= steps[1].tol {
		return def
	}
	for _, r := range []fitted{fitStep(m, s, -1, false), fitStep(m, s, -1, true), fitStep(m, s, 1, true)} {
		if math.Abs(r.err) > max(s.tol, math.Abs(def.err)) {
			continue // fits this step worse
		}
		if e := nextErr(r); e < bestErr {
			best, bestErr = r, e
		}
	}
	return best
}

// bisect narrows the fractions between lo and hi, across which the error
// changes sign, to the one closer to none.
func bisect(try func(float64) fitted, lo, hi fitted) fitted {
	best := lo
	if math.Abs(hi.err) < math.Abs(best.err) {
		best = hi
	}
	for range halvings {
		r := try((math.Abs(lo.b) + math.Abs(hi.b)) / 2)
		if math.Abs(r.err) < math.Abs(best.err) {
			best = r
		}
		if (r.err > 0) == (lo.err > 0) {
			lo = r
		} else {
			hi = r
		}
	}
	return best
}

// run replays steps through m with the fitted fractions and returns what
// each step admits.
func run(m model, steps []step, bs []bunching) []float64 {
	out := make([]float64, len(steps))
	if len(steps) == 0 {
		return out
	}
	m.begin(steps[0].start)
	for i, s := range steps {
		if s.n > 0 {
			out[i] = m.admit(s.shape(bs[i]))
		}
	}
	return out
}

// DiscreteMax is the most attempts replayed attempt by attempt; above it
// the replay is a fluid (see the package doc, Cost).
const DiscreteMax = 10_000

// Fitted is a limiter's recorded demand fitted to what today's settings
// did: the arrival models and the replay's error at today's settings.
// It is read-only, so one Fitted serves any number of proposals at once.
type Fitted struct {
	lim      Limiter
	steps    []step
	discrete bool
	// bs are each arrival model's bunchings, step by step; nil when
	// today's settings are not known (evenly spread then).
	bs    [models][]bunching
	check *Check
	// err is the relative error at today's settings that widens a
	// prediction's band.
	err float64
}

// Fit fits demand (and fine, see Request.Fine) to what the limiter did at
// its current settings. A limiter whose current settings the replay
// cannot take (an access counter of unknown limit) is fitted with every
// step's attempts evenly spread and no Check.
func Fit(lim Limiter, demand, fine Series) (*Fitted, error) {
	return fitIn(lim, demand, fine, auto)
}

// How a fit decides attempts: by their number (DiscreteMax), or always
// one way (the tests compare the two).
const (
	auto = iota
	discrete
	fluid
)

func fitIn(lim Limiter, demand, fine Series, mode int) (*Fitted, error) {
	if err := lim.supported(); err != nil {
		return nil, err
	}
	if err := demand.check(); err != nil {
		return nil, err
	}
	if fine.StepMS != 0 || len(fine.Points) > 0 {
		if err := fine.check(); err != nil {
			return nil, err
		}
	}
	f := &Fitted{lim: lim, steps: splice(demand, fine)}
	var attempts int64
	for _, s := range f.steps {
		attempts += s.n
	}
	f.discrete = mode == discrete || mode == auto && attempts <= DiscreteMax
	m, err := lim.model(lim.Current, f.discrete)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return nil, err
		}
		return f, nil // today's settings unknown: no fit, no check
	}
	for k := range models {
		f.bs[k] = fit(m.copy(), f.steps, k)
	}
	var recorded int64
	var replayed float64
	for i, a := range run(m.copy(), f.steps, f.bs[chosen]) {
		replayed += float64(f.steps[i].n) - a
		recorded += f.steps[i].n - f.steps[i].acquired
	}
	c := &Check{Recorded: recorded, Replayed: int64(math.Round(replayed))}
	f.err = (replayed - float64(recorded)) / float64(max(recorded, 1))
	c.ErrorPct = math.Round(f.err*10000) / 100
	f.err = math.Abs(f.err)
	f.check = c
	return f, nil
}

// Steps is how many steps the fit holds (a replay costs a bounded amount
// per step).
func (f *Fitted) Steps() int { return len(f.steps) }

// Replay replays the fitted demand at proposed under each arrival model:
// its answer is the chosen model's, its band the spread of all of them
// widened by the error at today's settings. pointMS is Request.PointMS.
func (f *Fitted) Replay(proposed Settings, pointMS int64) (*Result, error) {
	m, err := f.lim.model(proposed, f.discrete)
	if err != nil {
		return nil, err
	}
	if pointMS == 0 {
		pointMS = DefaultPointMS
	}
	if pointMS < 0 {
		return nil, errors.New("whatif: negative point width")
	}
	res := &Result{LowerBound: f.lim.RejectionsHidden, Points: []ResultPoint{}, Check: f.check}
	if len(f.steps) == 0 {
		return res, nil
	}
	var admitted [models][]float64
	for k := range models {
		bs := f.bs[k]
		if bs == nil {
			bs = make([]bunching, len(f.steps))
			for i := range bs {
				bs[i] = 1
			}
		}
		admitted[k] = run(m.copy(), f.steps, bs)
	}
	first, last := f.steps[0], f.steps[len(f.steps)-1]
	res.SpanS = float64(last.start+last.width-first.start) / 1000
	// Per point: each model's rejections; the chosen one's is the answer.
	var rej [models]float64
	pointAt := int64(math.MinInt64)
	var total [models]float64
	flush := func() {
		if len(res.Points) == 0 {
			return
		}
		rp := &res.Points[len(res.Points)-1]
		rp.Predicted = f.prediction(rp.Attempts, rej)
		rej = [models]float64{}
	}
	var fineFrom int64 = -1
	for i, s := range f.steps {
		if at := floorDiv(s.t, pointMS) * pointMS; at != pointAt {
			flush()
			pointAt = at
			res.Points = append(res.Points, ResultPoint{T: time.UnixMilli(at).UTC()})
		}
		if s.fine && fineFrom < 0 {
			fineFrom = s.start
		}
		rp := &res.Points[len(res.Points)-1]
		rp.Attempts += s.n
		rp.Actual.Admitted += s.acquired
		rp.Actual.Rejected += s.n - s.acquired
		for k := range models {
			rej[k] += float64(s.n) - admitted[k][i]
			total[k] += float64(s.n) - admitted[k][i]
		}
	}
	flush()
	if fineFrom >= 0 {
		res.FineS = float64(last.start+last.width-fineFrom) / 1000
	}
	for _, rp := range res.Points {
		res.Attempts += rp.Attempts
		res.Actual.Admitted += rp.Actual.Admitted
		res.Actual.Rejected += rp.Actual.Rejected
	}
	res.Predicted = f.prediction(res.Attempts, total)
	return res, nil
}

// prediction is the answer for attempts that each model rejected rej of:
// the chosen model's, with the band of all.
func (f *Fitted) prediction(attempts int64, rej [models]float64) Prediction {
	r := min(attempts, max(0, int64(math.Round(rej[chosen]))))
	p := Prediction{Admitted: attempts - r, Rejected: r}
	lo, hi := rej[0], rej[0]
	for _, r := range rej[1:] {
		lo, hi = min(lo, r), max(hi, r)
	}
	p.Low = max(0, min(p.Rejected, int64(math.Floor(lo*(1-f.err)))))
	p.High = min(attempts, max(p.Rejected, int64(math.Ceil(hi*(1+f.err)))))
	return p
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
