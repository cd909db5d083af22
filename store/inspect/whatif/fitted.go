package whatif

import (
	"errors"
	"math"
	"slices"
	"time"
)

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
	// fits says, per model and step, that the model's replay at today's
	// settings is within the step's tolerance there.
	fits [models][]bool
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
	var replayed [models]float64
	var errs [models]float64
	for k, am := range arrivalModels {
		switch {
		case am.bunch != 0:
			f.bs[k] = fitShare(m.copy(), f.steps, am)
		case am.side != 0:
			f.bs[k] = fit(m.copy(), f.steps, am, back)
		}
		f.fits[k] = make([]bool, len(f.steps))
		var e float64
		for i, a := range run(m.copy(), f.steps, am, f.bs[k]) {
			s := f.steps[i]
			replayed[k] += float64(s.n) - a
			e += a - float64(s.acquired)
			f.fits[k][i] = math.Abs(e) <= s.tol || math.Abs(a-float64(s.acquired)) <= s.tol
		}
		if errs[k] = relErr(replayed[k], recorded); errs[k] <= MaxTrustedErrorPct/100 && am.bunch == 0 {
			f.use = append(f.use, k)
		}
	}
	if len(f.use) == 0 {
		// None fits: the closest make the answer. The evenly spread
		// replay, unfitted, can be off by half the rejections and would
		// only drag the mean away from what happened.
		closest := math.Inf(1)
		for k, am := range arrivalModels {
			if am.bunch == 0 {
				closest = min(closest, errs[k])
			}
		}
		for k, am := range arrivalModels {
			if errs[k] <= closest+MaxTrustedErrorPct/100 && am.bunch == 0 {
				f.use = append(f.use, k)
			}
		}
	}
	fineE := fineErr(m, f.steps, arrivalModels[f.use[0]], f.bs[f.use[0]])
	for k := range models {
		if slices.Contains(f.use, k) || errs[k] <= fineE && arrivalModels[k].bunch == 0 {
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
// within each bucket, replayed at today's settings (m) from the state
// model am with its bunchings bs left when the buckets begin, are from the
// rejections recorded, in parts of those: what the time of attempts
// within 200 ms still moves, as when an attempt opened a window just
// before or just after another ended. The fit makes up for it at today's
// settings, not at others, so it widens the band. 0 with fewer than
// minFineRejections recorded in buckets.
func fineErr(m model, steps []step, am arrivalModel, bs []bunching) float64 {
	i := slices.IndexFunc(steps, func(s step) bool { return s.fine })
	if i < 0 {
		return 0
	}
	even := make([]bunching, len(steps))
	for k := range even {
		even[k] = 1
		if k < i && bs != nil {
			even[k] = bs[k]
		}
	}
	var recorded int64
	var replayed float64
	for k, a := range run(m.copy(), steps, am, even)[i:] {
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
	var admitted [lanes][]float64
	band := f.band
	for k := range models {
		if slices.Contains(f.band, k) || f.fits[k] != nil {
			admitted[k] = run(m.copy(), f.steps, arrivalModels[k], f.bs[k])
		}
	}
	if res.FineS = f.fineS(); res.FineS > 0 {
		for j := range jitters {
			admitted[models+j] = run(m.copy(), f.steps, arrivalModels[f.use[0]], f.jittered(j))
			band = append(band[:len(band):len(band)], models+j)
		}
	}
	first, last := f.steps[0], f.steps[len(f.steps)-1]
	res.SpanS = float64(last.start+last.width-first.start) / 1000
	// Per point: each model's rejections, and the envelope.
	var rej, total [lanes + 2]float64
	pointAt := int64(math.MinInt64)
	flush := func() {
		if len(res.Points) == 0 {
			return
		}
		rp := &res.Points[len(res.Points)-1]
		rp.Predicted = f.prediction(rp.Attempts, rej, band)
		rej = [lanes + 2]float64{}
	}
	for i, s := range f.steps {
		if at := floorDiv(s.t, pointMS) * pointMS; at != pointAt {
			flush()
			pointAt = at
			res.Points = append(res.Points, ResultPoint{T: time.UnixMilli(at).UTC()})
		}
		rp := &res.Points[len(res.Points)-1]
		rp.Attempts += s.n
		rp.Actual.Admitted += s.acquired
		rp.Actual.Rejected += s.n - s.acquired
		for _, k := range band {
			rej[k] += float64(s.n) - admitted[k][i]
			total[k] += float64(s.n) - admitted[k][i]
		}
		lo, hi := f.envelope(i, admitted[:models])
		rej[lanes], rej[lanes+1] = rej[lanes]+float64(s.n)-hi, rej[lanes+1]+float64(s.n)-lo
		total[lanes], total[lanes+1] = total[lanes]+float64(s.n)-hi, total[lanes+1]+float64(s.n)-lo
	}
	flush()
	for _, rp := range res.Points {
		res.Attempts += rp.Attempts
		res.Actual.Admitted += rp.Actual.Admitted
		res.Actual.Rejected += rp.Actual.Rejected
	}
	res.Predicted = f.prediction(res.Attempts, total, band)
	return res, nil
}

// envelope is the fewest and the most step i admits at the proposed
// settings (admitted, per model) under the models that fit it at today's
// settings (under the models in use where none does); for a stats
// bucket, the mean of the models in use.
func (f *Fitted) envelope(i int, admitted [][]float64) (lo, hi float64) {
	if f.steps[i].fine {
		var mean float64
		for _, k := range f.use {
			mean += admitted[k][i] / float64(len(f.use))
		}
		return mean, mean
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for k := range models {
		if f.fits[k] != nil && f.fits[k][i] {
			lo, hi = min(lo, admitted[k][i]), max(hi, admitted[k][i])
		}
	}
	if lo > hi {
		for _, k := range f.use {
			lo, hi = min(lo, admitted[k][i]), max(hi, admitted[k][i])
		}
	}
	return lo, hi
}

// The jittered replays that join the band where stats buckets were
// replayed: each bucket's attempts in its first or its second half, by a
// fixed pseudo-random draw, the steps before them as the first model in
// use has them. Today's record cannot tell when within a bucket they
// came, and at other settings that can move which bucket a window opens
// in (a fixed window of another length meets other attempts at its
// edges). A window's phase carries from bucket to bucket, so it takes
// several draws to meet the earliest and the latest openings the
// buckets allow.
const (
	jitters = 8
	lanes   = models + jitters
)

// jittered is jitter j's bunchings.
func (f *Fitted) jittered(j int) []bunching {
	bs := make([]bunching, len(f.steps))
	fitted := f.bs[f.use[0]]
	for i, s := range f.steps {
		switch {
		case s.fine:
			bs[i] = 0.5
			if (uint64(i)*0x9e3779b97f4a7c15)>>(61-j)&1 == 1 {
				bs[i] = -0.5
			}
		case fitted != nil:
			bs[i] = fitted[i]
		default:
			bs[i] = 1
		}
	}
	return bs
}

// fineS is the time the stats buckets cover, first to last, in seconds.
func (f *Fitted) fineS() float64 {
	i := slices.IndexFunc(f.steps, func(s step) bool { return s.fine })
	if i < 0 {
		return 0
	}
	last := f.steps[len(f.steps)-1]
	return float64(last.start+last.width-f.steps[i].start) / 1000
}

// prediction is the answer for attempts that each model rejected rej of:
// the mean of the models in use, with the band of those in band.
func (f *Fitted) prediction(attempts int64, rej [lanes + 2]float64, band []int) Prediction {
	var mean float64
	for _, k := range f.use {
		mean += rej[k] / float64(len(f.use))
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, k := range band {
		lo, hi = min(lo, rej[k]), max(hi, rej[k])
	}
	lo, hi = min(lo, rej[lanes]), max(hi, rej[lanes+1])
	r := min(attempts, max(0, int64(math.Round(mean))))
	p := Prediction{Admitted: attempts - r, Rejected: r}
	p.Low = max(0, min(p.Rejected, int64(math.Floor(lo*(1-f.err)))))
	p.High = min(attempts, max(p.Rejected, int64(math.Ceil(hi*(1+f.err)))))
	return p
}
