package whatif

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// ErrUnsupported: the limiter's kind cannot be replayed (not a limiter, or
// a per-client Redisson limiter, whose demand is not recorded per client).
var ErrUnsupported = errors.New("whatif: limiter cannot be replayed")

// ErrSeries: the demand series is malformed (a step that is not positive,
// points out of order or overlapping, negative counts). It is the caller's
// data, not the user's input.
var ErrSeries = errors.New("whatif: bad demand series")

// Settings are a limiter's rate and interval as the console edits them
// (inspect.LimiterEdit): for a token bucket the capacity (max_permits) and
// the milliseconds per permit; for a window (access counter, Redisson
// limiter) the permits per window and the window in milliseconds.
type Settings struct {
	Rate       int64   `json:"rate"`
	IntervalMS float64 `json:"interval_ms"`
}

// Limiter is the limiter whose demand is replayed, as the console read it.
type Limiter struct {
	Kind inspect.Kind
	// Algorithm is a Redisson limiter's inspect.AlgorithmFixedWindow or
	// inspect.AlgorithmSlidingWindow; "" (no acquire seen yet) replays the
	// sliding window of current Redisson versions. Ignored for other kinds.
	Algorithm string
	// Current are today's settings.
	Current Settings
	// PerClient: a Redisson limiter of type 1 (a window per client).
	PerClient bool
	// RejectionsHidden: the recorded demand misses the attempts other
	// clients rejected in their own scripts (inspect.LimiterInfo's field).
	RejectionsHidden bool
}

// FromInfo is the Limiter the console read as info.
func FromInfo(info *inspect.LimiterInfo) Limiter {
	return Limiter{
		Kind:             info.Kind,
		Algorithm:        info.Algorithm,
		Current:          Settings{Rate: info.Rate, IntervalMS: info.IntervalMS},
		PerClient:        info.PerClient,
		RejectionsHidden: info.RejectionsHidden,
	}
}

// Point is one step of recorded demand: the outcomes counted from T for the
// series' step. Demand is Acquired + Rejected.
type Point struct {
	T time.Time `json:"t"`
	inspect.Counts
}

// Series is recorded demand at a fixed step: 200 ms (the stats buckets),
// 10 s (the last hour's history) or 60 s (the day's), or any other.
type Series struct {
	StepMS int64
	// Points in time order, each covering [T, T+StepMS); steps without a
	// point had no demand.
	Points []Point
}

// Bounds on a series, so that the arrival arithmetic stays in int64.
const (
	MaxStepMS        = 24 * 60 * 60 * 1000
	MaxPointAttempts = 1 << 32
)

// Outcome is what a limiter did (or would have done) to the demand.
type Outcome struct {
	Admitted int64 `json:"admitted"`
	Rejected int64 `json:"rejected"`
}

// ResultPoint is one output point (a minute unless Request.PointMS says
// otherwise): the demand in it, what happened, and what the proposed
// settings would have done.
type ResultPoint struct {
	T         time.Time `json:"t"`
	Attempts  int64     `json:"attempts"`
	Actual    Outcome   `json:"actual"`
	Predicted Outcome   `json:"predicted"`
}

// Result is the answer of POST /api/limiters/{name}/what-if.
type Result struct {
	// SpanS is the time the series covers, first step's start to last
	// step's end, in seconds.
	SpanS     float64       `json:"span_s"`
	Attempts  int64         `json:"attempts"`
	Actual    Outcome       `json:"actual"`
	Predicted Outcome       `json:"predicted"`
	Points    []ResultPoint `json:"points"`
	// LowerBound: rejections are not visible for this limiter, so the
	// demand replayed is only what was recorded (see the package doc).
	LowerBound bool `json:"lower_bound"`
}

// DefaultPointMS is the width of the output points: a minute.
const DefaultPointMS = 60 * 1000

// Request is one what-if.
type Request struct {
	Limiter  Limiter
	Proposed Settings
	Demand   Series
	// PointMS is the width of the output points, aligned to multiples of
	// it since the epoch; 0 means DefaultPointMS. A step counts in the
	// point its start falls in.
	PointMS int64
}

// Replay replays req.Demand through the limiter's algorithm at
// req.Proposed (see the package doc). A proposed rate or interval the
// limiter would refuse is a CodeInvalid *inspect.Error naming "rate" or
// "interval_ms"; a limiter that cannot be replayed is CodeUnsupported
// (matching ErrUnsupported); a malformed series is ErrSeries.
func Replay(req Request) (*Result, error) {
	sim, err := req.Limiter.replayer(req.Proposed)
	if err != nil {
		return nil, err
	}
	d := req.Demand
	if err := d.check(); err != nil {
		return nil, err
	}
	pointMS := req.PointMS
	if pointMS == 0 {
		pointMS = DefaultPointMS
	}
	if pointMS < 0 {
		return nil, fmt.Errorf("whatif: point width of %d ms", pointMS)
	}
	res := &Result{LowerBound: req.Limiter.RejectionsHidden, Points: []ResultPoint{}}
	if len(d.Points) == 0 {
		return res, nil
	}
	first := d.Points[0].T.UnixMilli()
	spanMS := d.Points[len(d.Points)-1].T.UnixMilli() + d.StepMS - first
	res.SpanS = float64(spanMS) / 1000
	res.Points = make([]ResultPoint, 0, min(int64(len(d.Points)), spanMS/pointMS+2))
	sim.start(first)
	pointAt := int64(-1)
	for _, p := range d.Points {
		start := p.T.UnixMilli()
		n := p.Acquired + p.Rejected
		var admitted int64
		if n > 0 {
			admitted = sim.step(arrivals{start: start, width: d.StepMS, n: n})
		}
		if at := start / pointMS * pointMS; at != pointAt {
			pointAt = at
			res.Points = append(res.Points, ResultPoint{T: time.UnixMilli(at).UTC()})
		}
		rp := &res.Points[len(res.Points)-1]
		rp.Attempts += n
		rp.Actual.Admitted += p.Acquired
		rp.Actual.Rejected += p.Rejected
		rp.Predicted.Admitted += admitted
		rp.Predicted.Rejected += n - admitted
	}
	for _, rp := range res.Points {
		res.Attempts += rp.Attempts
		res.Actual.Admitted += rp.Actual.Admitted
		res.Actual.Rejected += rp.Actual.Rejected
		res.Predicted.Admitted += rp.Predicted.Admitted
		res.Predicted.Rejected += rp.Predicted.Rejected
	}
	return res, nil
}

// check says why s cannot be replayed, wrapping ErrSeries.
func (s Series) check() error {
	if s.StepMS < 1 || s.StepMS > MaxStepMS {
		return fmt.Errorf("%w: step of %d ms, want 1..%d", ErrSeries, s.StepMS, int64(MaxStepMS))
	}
	var prev int64
	for i, p := range s.Points {
		t := p.T.UnixMilli()
		if t < 0 {
			return fmt.Errorf("%w: point %d is before 1970", ErrSeries, i)
		}
		if i > 0 && t < prev+s.StepMS {
			return fmt.Errorf("%w: point %d at %d ms starts before the step at %d ms ends", ErrSeries, i, t, prev)
		}
		if p.Acquired < 0 || p.Rejected < 0 || p.Errors < 0 {
			return fmt.Errorf("%w: point %d has a negative count", ErrSeries, i)
		}
		if p.Acquired+p.Rejected > MaxPointAttempts || p.Acquired+p.Rejected < 0 {
			return fmt.Errorf("%w: point %d has more than %d attempts", ErrSeries, i, int64(MaxPointAttempts))
		}
		prev = t
	}
	return nil
}

// FoldBuckets turns stats buckets (inspect.ReadStatsRing: bucket number ->
// counts, a bucket being inspect.BucketMS long) into a series of stepMS,
// which must be a positive multiple of inspect.BucketMS. Steps without a
// bucket are left out.
func FoldBuckets(buckets map[int64]inspect.Counts, stepMS int64) (Series, error) {
	if stepMS < inspect.BucketMS || stepMS%inspect.BucketMS != 0 || stepMS > MaxStepMS {
		return Series{}, fmt.Errorf("%w: step of %d ms is not a multiple of the %d ms stats bucket", ErrSeries, stepMS, inspect.BucketMS)
	}
	steps := make(map[int64]inspect.Counts, len(buckets))
	for b, c := range buckets {
		if b < 0 {
			continue // no script writes one: Redis TIME is after 1970
		}
		at := b * inspect.BucketMS / stepMS * stepMS
		steps[at] = steps[at].Add(c)
	}
	s := Series{StepMS: stepMS, Points: make([]Point, 0, len(steps))}
	for at, c := range steps {
		s.Points = append(s.Points, Point{T: time.UnixMilli(at).UTC(), Counts: c})
	}
	slices.SortFunc(s.Points, func(a, b Point) int { return a.T.Compare(b.T) })
	return s, nil
}
