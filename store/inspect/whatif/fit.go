package whatif

import (
	"math"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// arrivalModel is how a step's attempts came, within it (see the package
// doc): a base share of the step's mean rate all along, the rest bunched
// into a fraction of the step at its end (side 1) or at its start (-1);
// the fraction is the loosest that fits what today's settings did, or the
// tightest.
type arrivalModel struct {
	base  float64
	side  float64
	tight bool
	// bunch, when not 0, is the fraction of the step the rest is
	// bunched in, the base share fitted instead (fitShare): 2 % (the
	// densest), 10 %, or half (a step whose rate changed halfway, as
	// demand that is steady for seconds at a time does). A stalled
	// client's bursts come in any of these widths.
	bunch float64
}

// arrivalModels are the models replayed; the last spreads every step's
// attempts evenly, unfitted. Those of no fixed bunch whose replay at
// today's settings comes within MaxTrustedErrorPct of what happened make
// the answer (their mean; when none does, those within MaxTrustedErrorPct
// of the closest); those within the error that the time of attempts
// within a stats bucket makes (fineErr), if more, join them in the band
// (their spread), and every model that fits a step joins the band there
// (Fitted.envelope).
var arrivalModels = [...]arrivalModel{
	{side: 1}, {side: -1},
	{side: 1, tight: true}, {side: -1, tight: true},
	{base: 0.25, side: 1}, {base: 0.25, side: -1},
	{base: 0.5, side: 1}, {base: 0.5, side: -1},
	{base: 0.75, side: 1}, {base: 0.75, side: -1},
	{side: 1, bunch: 0.02}, {side: -1, bunch: 0.02},
	{side: 1, bunch: 0.1}, {side: -1, bunch: 0.1},
	{side: 1, bunch: 0.5}, {side: -1, bunch: 0.5},
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
var fractions = [...]float64{1, .95, .9, .85, .8, .7, .6, .5, .4, .3, .2, .15, .1, .07, .05, .03, .02, .01, .005, .002, .001}

const halvings = 10

// stepTries is the most replays fitStep makes of a step: evenly spread,
// every other fraction, and the halvings between two of them.
const stepTries = len(fractions) + halvings

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
//
// Each replay of the step spends one of budget (at most stepTries); with
// none left the step's attempts are taken evenly spread.
func fitStep(m model, s step, base, sign float64, tight bool, err float64, budget *int) fitted {
	try := func(f float64) fitted {
		*budget--
		c := m.copy()
		return fitted{b: sign * f, next: c, err: err + s.admit(c, base, sign*f) - float64(s.acquired)}
	}
	fits := func(r fitted) bool { return math.Abs(r.err) <= s.tol }
	even := try(1)
	if s.n == 0 || fits(even) && !tight || *budget <= 0 {
		return even
	}
	tries := []fitted{even}
	first, last, best := -1, -1, 0
	if fits(even) {
		first, last = 0, 0
	}
	for k := 1; k < len(fractions) && (last < 0 || last == k-1) && *budget > 0; k++ {
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
	budget := max(fitBudget*len(steps), 4000)
	for i, s := range steps {
		// A step's own fit is bounded (stepTries) and never waits on the
		// budget: a few steps that no arrivals fit would spend it going
		// back, and every step after them would be taken evenly spread,
		// the running error left to grow.
		tries := stepTries
		r := fitStep(before[i].next, s, am.base, am.side, am.tight, before[i].err, &tries)
		if math.Abs(r.err) > s.tol && budget > 0 {
			r = refit(steps, am, before, bs, i, r, memory, &budget)
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
func refit(steps []step, am arrivalModel, before []fitted, bs []bunching, i int, r fitted, memory int64, budget *int) fitted {
	miss := func(r fitted, k int) float64 { return max(0, math.Abs(r.err)-steps[k].tol) }
	for j := i - 1; j >= max(0, i-maxBack) && steps[j].start+steps[j].width+memory > steps[i].start && *budget > 0; j-- {
		if steps[j].n == 0 {
			continue
		}
		for _, b := range [2]bunching{edge, -edge} {
			if b == bs[j] {
				continue
			}
			*budget--
			trial := make([]fitted, 0, i-j+1)
			c := before[j].next.copy()
			t := fitted{b: b, next: c, err: before[j].err + steps[j].admit(c, am.base, b) - float64(steps[j].acquired)}
			ok := miss(t, j) <= miss(before[j+1], j)
			for k := j + 1; ok && k <= i; k++ {
				trial = append(trial, t)
				t = fitStep(t.next, steps[k], am.base, am.side, am.tight, t.err, budget)
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
	return makeUp(steps, am, before, bs, i, r, memory, budget)
}

// makeUp is refit's last resort for step i, which no arrivals fit from
// any state the steps before can leave (a short step whose outcome the
// limiter's state decides: the newest history step, flushed while it
// fills, a few hundred ms long and rejected whole because the window the
// step before filled is still full). Step i's own count cannot be met,
// but the rejections in all can: the steps within the limiter's memory
// before it are fitted to a running error of what step i adds the other
// way (aimed again at what is left, makeUpTries times), so the running
// error is back within step i's tolerance after it. It returns step i's
// fit and has rewritten bs and before, or returns r and changes nothing,
// unless that brings step i closer and leaves no step further off than
// step i was.
func makeUp(steps []step, am arrivalModel, before []fitted, bs []bunching, i int, r fitted, memory int64, budget *int) fitted {
	miss := func(r fitted, k int) float64 { return max(0, math.Abs(r.err)-steps[k].tol) }
	worst := miss(r, i)
	for j := i - 1; j >= max(0, i-maxBack) && steps[j].start+steps[j].width+memory > steps[i].start && *budget > 0; j-- {
		if steps[j].n == 0 {
			continue
		}
		aim := before[i].err - r.err
		for range makeUpTries {
			trial := make([]fitted, 0, i-j+1)
			t, far := before[j], 0.0
			for k := j; k < i; k++ {
				t = fitStep(t.next, steps[k], am.base, am.side, am.tight, t.err-aim, budget)
				t.err += aim
				far = max(far, miss(t, k))
				trial = append(trial, t)
			}
			t = fitStep(t.next, steps[i], am.base, am.side, am.tight, t.err, budget)
			if far <= worst && miss(t, i) < miss(r, i) {
				for k, f := range trial {
					bs[j+k], before[j+k+1] = f.b, f
				}
				if r = t; miss(t, i) == 0 {
					return r
				}
			}
			if *budget <= 0 || t.err == 0 {
				break
			}
			aim -= t.err
		}
	}
	return r
}

// makeUpTries bounds the aims makeUp tries per step it goes back to.
const makeUpTries = 3

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

// maxBack bounds the steps a refit goes back over; fitBudget the replays
// of one step a fit makes on average going back (so a fit costs a bounded
// amount per step however few steps fit: with the budget spent, a step
// that does not fit keeps its miss).
const (
	maxBack   = 64
	fitBudget = 48
)

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

// fitShare fits each step's base share under a model am with a fixed
// bunch, from the state and error the steps before left: the share that
// brings the running error closest to none.
func fitShare(m model, steps []step, am arrivalModel) []float64 {
	bases := make([]float64, len(steps))
	if len(steps) == 0 {
		return bases
	}
	m.begin(steps[0].start)
	var err float64
	for i, s := range steps {
		try := func(base float64) fitted {
			c := m.copy()
			return fitted{b: base, next: c, err: err + s.admit(c, base, am.side*am.bunch) - float64(s.acquired)}
		}
		// A larger share thins the bunch: fewer rejections, the error up.
		lo, hi := try(0), try(1)
		best := lo
		if math.Abs(hi.err) < math.Abs(best.err) {
			best = hi
		}
		for k := 0; k < 2*halvings && lo.err < -s.tol && hi.err > s.tol; k++ {
			mid := try((lo.b + hi.b) / 2)
			if math.Abs(mid.err) < math.Abs(best.err) {
				best = mid
			}
			if mid.err < 0 {
				lo = mid
			} else {
				hi = mid
			}
			if math.Abs(mid.err) <= s.tol {
				break
			}
		}
		bases[i], m, err = best.b, best.next, best.err
	}
	return bases
}

// run replays steps through m under model am with its bunchings (or, for a
// model of a fixed bunch, its base shares) and returns what each step
// admits.
func run(m model, steps []step, am arrivalModel, bs []bunching) []float64 {
	out := make([]float64, len(steps))
	if len(steps) == 0 {
		return out
	}
	m.begin(steps[0].start)
	for i, s := range steps {
		base, b := am.base, 1.0
		switch {
		case am.bunch != 0 && bs != nil:
			base, b = bs[i], am.side*am.bunch
		case bs != nil:
			b = bs[i]
		}
		out[i] = s.admit(m, base, b)
	}
	return out
}
