package whatif

import (
	"errors"
	"math"
	"slices"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// step is one step of demand on the replay's clock.
type step struct {
	start, width int64 // what happened in [start, start+width), Unix ms
	t            int64 // where it counts in the output points (its T)
	n, acquired  int64 // attempts, of which admitted
	fine         bool  // a stats bucket (or finer), not a history step
	// tol is how far the replay at today's settings may be off acquired
	// and still fit: half a rounding, and half what moving an edge by
	// Series.EdgeMS moves of the step's smaller outcome (so that the
	// steps' slack adds up to at most half that share of the rejections).
	tol float64
}

// steps turns s into steps on the replay's clock.
func (s Series) steps() []step {
	fine := s.StepMS <= inspect.BucketMS
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
	coarse := d.steps()
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
	fineSteps := fine.steps()
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

// arrivalModel is how a step's attempts came, within it (see the package
// doc): a base share of the step's mean rate all along, the rest bunched
// into a fraction of the step at its end (side 1) or at its start (-1);
// the fraction is the loosest that fits what today's settings did, or the
// tightest.
type arrivalModel struct {
	base  float64
	side  float64
	tight bool
}

// arrivalModels are the models replayed; the last spreads every step's
// attempts evenly, unfitted. Those whose replay at today's settings comes
// within MaxTrustedErrorPct of what happened make the answer (their mean;
// when none does, all of them); those within the error that the time of
// attempts within a stats bucket makes (fineErr), if more, join them in
// the band (their spread).
var arrivalModels = [...]arrivalModel{
	{side: 1}, {side: -1},
	{side: 1, tight: true}, {side: -1, tight: true},
	{base: 0.25, side: 1}, {base: 0.25, side: -1},
	{base: 0.5, side: 1}, {base: 0.5, side: -1},
	{base: 0.75, side: 1}, {base: 0.75, side: -1},
	{},
}

const models = len(arrivalModels)

// A bunching is the fraction |b| of a step its bunched attempts came in,
// at its end when b > 0, at its start when b < 0; 1 is evenly spread.
type bunching = float64

// admit feeds s's attempts to m as they came under base and b: the base's
// share evenly over the time outside the bunch, the rest evenly over the
// bunch (whole milliseconds, at least one), in time order.
func (s step) admit(m model, base float64, b bunching) float64 {
	if s.n == 0 {
		return 0
	}
	w := min(s.width, max(1, int64(math.Round(math.Abs(b)*float64(s.width)))))
	if w == s.width {
		return m.admit(arrivals{start: s.start, width: s.width, n: s.n})
	}
	calm := arrivals{width: s.width - w, n: int64(math.Round(base * float64(s.n) * float64(s.width-w) / float64(s.width)))}
	bunch := arrivals{width: w, n: s.n - calm.n}
	if b > 0 {
		calm.start, bunch.start = s.start, s.start+s.width-w
	} else {
		bunch.start, calm.start = s.start, s.start+w
	}
	parts := [2]arrivals{calm, bunch}
	if b < 0 {
		parts = [2]arrivals{bunch, calm}
	}
	var got float64
	for _, a := range parts {
		if a.n > 0 {
			got += m.admit(a)
		}
	}
	return got
}

// fractions are the bunchings the fit tries, evenly spread first; the
// loose fit then narrows down between two neighbours by halving.
var fractions = []float64{1, .95, .9, .85, .8, .7, .6, .5, .4, .3, .2, .15, .1, .07, .05, .03, .02, .01, .005, .002, .001}

const halvings = 10

// fitted is one step's bunching, the state it leaves, and the replay's
// error so far: the attempts it admitted up to this step's end less those
// recorded.
type fitted struct {
	b    bunching
	next model
	err  float64
}

// fitStep fits s's attempts, from state m with the error err so far, at
// the end (sign 1) or the start (-1): the largest fraction that leaves
// the error within the step's tolerance, or with tight the smallest of
// those next to it on the grid; else the one that comes closest. The
// error so far counts, so a step makes up for what the steps before
// could not fit.
func fitStep(m model, s step, base, sign float64, tight bool, err float64) fitted {
	try := func(f float64) fitted {
		c := m.copy()
		return fitted{b: sign * f, next: c, err: err + s.admit(c, base, sign*f) - float64(s.acquired)}
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

// fit returns each step's bunching under arrival model am, each fitted
// from the state and error the steps before left.
//
// A step's fit sees only what the steps before did, while when an
// attempt came can show only later: the attempt that opened a window
// decides which later step the next window opens in. So a step that
// cannot be fitted goes back over the steps within the limiter's memory
// (at most maxBack of them) and tries each one's attempts pushed to its very start or
// end, fitting the steps after it again, until one lets this step fit
// and fits those as well as before.
func fit(m model, steps []step, am arrivalModel, memory int64) []bunching {
	bs := make([]bunching, len(steps))
	if len(steps) == 0 {
		return bs
	}
	m.begin(steps[0].start)
	// before[i] is the state and error before step i.
	before := make([]fitted, len(steps)+1)
	before[0] = fitted{next: m}
	for i, s := range steps {
		r := fitStep(before[i].next, s, am.base, am.side, am.tight, before[i].err)
		if math.Abs(r.err) > s.tol {
			r = refit(steps, am, before, bs, i, r, memory)
		}
		bs[i], before[i+1] = r.b, r
		if i >= maxBack {
			before[i-maxBack] = fitted{} // no longer gone back to
		}
	}
	return bs
}

// refit goes back from step i, which r fitted outside its tolerance (see
// fit): it returns step i's fit, and has rewritten bs and before for the
// steps it went back over, or returns r and changes nothing.
func refit(steps []step, am arrivalModel, before []fitted, bs []bunching, i int, r fitted, memory int64) fitted {
	miss := func(r fitted, k int) float64 { return max(0, math.Abs(r.err)-steps[k].tol) }
	for j := i - 1; j >= max(0, i-maxBack) && steps[j].start+steps[j].width+memory > steps[i].start; j-- {
		if steps[j].n == 0 {
			continue
		}
		for _, b := range [2]bunching{edge, -edge} {
			if b == bs[j] {
				continue
			}
			trial := make([]fitted, 0, i-j+1)
			c := before[j].next.copy()
			t := fitted{b: b, next: c, err: before[j].err + steps[j].admit(c, am.base, b) - float64(steps[j].acquired)}
			ok := miss(t, j) <= miss(before[j+1], j)
			for k := j + 1; ok && k <= i; k++ {
				trial = append(trial, t)
				t = fitStep(t.next, steps[k], am.base, am.side, am.tight, t.err)
				ok = k == i || miss(t, k) <= miss(before[k+1], k)
			}
			if !ok || miss(t, i) >= miss(r, i) {
				continue
			}
			for k, f := range trial {
				bs[j+k], before[j+k+1] = f.b, f
			}
			if miss(t, i) == 0 {
				return t
			}
			r = t
		}
	}
	return r
}

// edge is the bunching that pushes a step's attempts to its very start or
// end.
const edge = 0.05

// memory is how far back (ms) a limiter's state at s's settings can still
// depend on the attempts: a window's length, or the time a bucket takes
// to fill.
func memory(lim Limiter, s Settings) int64 {
	ms := s.IntervalMS
	if lim.Kind == inspect.KindTokenBucket {
		ms *= float64(s.Rate)
	}
	return int64(min(ms, MaxStepMS))
}

// maxBack bounds the steps a refit goes back over.
const maxBack = 64

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

// run replays steps through m under model am with its bunchings and
// returns what each step admits.
func run(m model, steps []step, am arrivalModel, bs []bunching) []float64 {
	out := make([]float64, len(steps))
	if len(steps) == 0 {
		return out
	}
	m.begin(steps[0].start)
	for i, s := range steps {
		b := 1.0
		if bs != nil {
			b = bs[i]
		}
		out[i] = s.admit(m, am.base, b)
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
	bs [models][]bunching
	// use are the models that make the answer, band those that make the
	// band.
	use, band []int
	check     *Check
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
	var recorded int64
	for _, s := range f.steps {
		recorded += s.n - s.acquired
	}
	back := memory(lim, lim.Current)
	fineE := fineErr(m, f.steps)
	var replayed [models]float64
	for k, am := range arrivalModels {
		if am.side != 0 {
			f.bs[k] = fit(m.copy(), f.steps, am, back)
		}
		for i, a := range run(m.copy(), f.steps, am, f.bs[k]) {
			replayed[k] += float64(f.steps[i].n) - a
		}
		switch e := relErr(replayed[k], recorded); {
		case e <= MaxTrustedErrorPct/100:
			f.use = append(f.use, k)
			f.band = append(f.band, k)
		case e <= fineE:
			f.band = append(f.band, k)
		}
	}
	if len(f.use) == 0 {
		f.use, f.band = nil, nil
		for k := range models {
			f.use = append(f.use, k)
			f.band = append(f.band, k)
		}
	}
	var mean float64
	for _, k := range f.use {
		mean += replayed[k] / float64(len(f.use))
	}
	f.err = max(relErr(mean, recorded), fineE)
	c := &Check{Recorded: recorded, Replayed: int64(math.Round(mean))}
	c.ErrorPct = math.Round((mean-float64(recorded))/float64(max(recorded, 1))*10000) / 100
	f.check = c
	return f, nil
}

// fineErr is how far the stats buckets' own attempts, spread evenly
// within each bucket, replayed at today's settings (m) from the first
// bucket on, are from the rejections recorded, in parts of those: what
// the time of attempts within 200 ms still moves, as when an attempt
// opened a window just before or just after another ended. The fit makes
// up for it at today's settings, not at others, so it widens the band.
// 0 with fewer than minFineRejections recorded in buckets.
func fineErr(m model, steps []step) float64 {
	i := slices.IndexFunc(steps, func(s step) bool { return s.fine })
	if i < 0 {
		return 0
	}
	var recorded int64
	var replayed float64
	for k, a := range run(m.copy(), steps[i:], arrivalModels[0], nil) {
		replayed += float64(steps[i+k].n) - a
		recorded += steps[i+k].n - steps[i+k].acquired
	}
	if recorded < minFineRejections {
		return 0
	}
	return relErr(replayed, recorded)
}

const minFineRejections = 20

// relErr is |replayed - recorded| in parts of recorded (of one when none).
func relErr(replayed float64, recorded int64) float64 {
	return math.Abs(replayed-float64(recorded)) / float64(max(recorded, 1))
}

// Steps is how many steps the fit holds (a replay costs a bounded amount
// per step).
func (f *Fitted) Steps() int { return len(f.steps) }

// Replay replays the fitted demand at proposed under each arrival model:
// its answer is the mean of the models that fit, its band their spread
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
	if f.use == nil {
		f = &Fitted{lim: f.lim, steps: f.steps, discrete: f.discrete, use: []int{models - 1}, band: []int{models - 1}} // evenly spread
	}
	var admitted [models][]float64
	for _, k := range f.band {
		admitted[k] = run(m.copy(), f.steps, arrivalModels[k], f.bs[k])
	}
	first, last := f.steps[0], f.steps[len(f.steps)-1]
	res.SpanS = float64(last.start+last.width-first.start) / 1000
	// Per point: each model's rejections.
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
		for _, k := range f.band {
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
// the mean of the models in use, with the band of those in the band.
func (f *Fitted) prediction(attempts int64, rej [models]float64) Prediction {
	var mean float64
	for _, k := range f.use {
		mean += rej[k] / float64(len(f.use))
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, k := range f.band {
		lo, hi = min(lo, rej[k]), max(hi, rej[k])
	}
	r := min(attempts, max(0, int64(math.Round(mean))))
	p := Prediction{Admitted: attempts - r, Rejected: r}
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
