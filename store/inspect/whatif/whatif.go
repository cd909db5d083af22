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
	// Current are today's settings: the recorded demand is fitted to what
	// they did (see the package doc).
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
	// EndMS, when not 0, is where the series ends (Unix ms, on the points'
	// clock): the last step is cut there. web/history flushes its newest
	// 10 s step while it fills.
	EndMS int64
	// FromMS, when not 0, is where the series begins (Unix ms, on the
	// points' clock), so a series that starts with empty steps says so.
	FromMS int64
	// LagMS: a step at T holds what happened in [T-LagMS, T+StepMS-LagMS).
	// web/history counts a stats bucket once the bucket after it is
	// complete, so its steps lag the buckets by one.
	LagMS int64
	// EdgeMS is how far a step's edges may be off the time they say: a
	// late tick moves a bucket into the next history step. 0 for stats
	// buckets, whose edges are exact. It is the slack the fit at today's
	// settings allows each step (see the package doc).
	EdgeMS int64
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

// Prediction is what the proposed settings would have done: the replay's
// answer, and the rejections it may be off by. Low and High span the
// arrival models that fit what today's settings did (attempts bunched at
// the end of each step or at its start), widened by the replay's error at
// today's settings (Check).
type Prediction struct {
	Admitted int64 `json:"admitted"`
	Rejected int64 `json:"rejected"`
	Low      int64 `json:"low"`
	High     int64 `json:"high"`
}

// Check is the replay at today's settings beside what they did: the
// rejections recorded, the rejections the replay gives, and its error in
// percent of the recorded (of one rejection when none were recorded).
type Check struct {
	Recorded int64   `json:"recorded"`
	Replayed int64   `json:"replayed"`
	ErrorPct float64 `json:"error_pct"`
}

// MaxTrustedErrorPct is the largest error at today's settings (Check) at
// which the console presents a prediction without a warning.
const MaxTrustedErrorPct = 2.0

// Trusted says the replay reproduced today's rejections within
// MaxTrustedErrorPct.
func (c Check) Trusted() bool {
	return c.ErrorPct >= -MaxTrustedErrorPct && c.ErrorPct <= MaxTrustedErrorPct
}

// ResultPoint is one output point (a minute unless Request.PointMS says
// otherwise): the demand in it, what happened, and what the proposed
// settings would have done.
type ResultPoint struct {
	T         time.Time  `json:"t"`
	Attempts  int64      `json:"attempts"`
	Actual    Outcome    `json:"actual"`
	Predicted Prediction `json:"predicted"`
}

// Result is the answer of POST /api/limiters/{name}/what-if.
type Result struct {
	// SpanS is the time the series covers, first step's start to last
	// step's end, in seconds; FineS the part of it replayed from 200 ms
	// stats buckets rather than 10 s steps.
	SpanS     float64    `json:"span_s"`
	FineS     float64    `json:"fine_s"`
	Attempts  int64      `json:"attempts"`
	Actual    Outcome    `json:"actual"`
	Predicted Prediction `json:"predicted"`
	// Check is nil when today's settings are not known (an access
	// counter registered without its limit): nothing to check against.
	Check  *Check        `json:"check"`
	Points []ResultPoint `json:"points"`
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
	// Fine, when it has a step, is finer demand (the 200 ms stats buckets
	// the console still holds) that replaces Demand's steps from the first
	// one it covers whole to Demand's end.
	Fine Series
	// PointMS is the width of the output points, aligned to multiples of
	// it since the epoch; 0 means DefaultPointMS. A step counts in the
	// point its start falls in.
	PointMS int64
}

// Replay replays req's demand through the limiter's algorithm at
// req.Proposed (see the package doc). A proposed rate or interval the
// limiter would refuse is a CodeInvalid *inspect.Error naming "rate" or
// "interval_ms"; a limiter that cannot be replayed is CodeUnsupported
// (matching ErrUnsupported); a malformed series is ErrSeries.
func Replay(req Request) (*Result, error) {
	fit, err := Fit(req.Limiter, req.Demand, req.Fine)
	if err != nil {
		return nil, err
	}
	return fit.Replay(req.Proposed, req.PointMS)
}

// check says why s cannot be replayed, wrapping ErrSeries.
func (s Series) check() error {
	if s.StepMS < 1 || s.StepMS > MaxStepMS {
		return fmt.Errorf("%w: step of %d ms, want 1..%d", ErrSeries, s.StepMS, int64(MaxStepMS))
	}
	if s.LagMS < 0 || s.LagMS > s.StepMS || s.EdgeMS < 0 || s.EdgeMS > s.StepMS {
		return fmt.Errorf("%w: lag %d ms or edge %d ms outside the %d ms step", ErrSeries, s.LagMS, s.EdgeMS, s.StepMS)
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
	if n := len(s.Points); n > 0 {
		if s.EndMS != 0 && s.EndMS <= s.Points[n-1].T.UnixMilli() {
			return fmt.Errorf("%w: the series ends at %d ms, before its last point", ErrSeries, s.EndMS)
		}
		if s.FromMS != 0 && s.FromMS > s.Points[0].T.UnixMilli() {
			return fmt.Errorf("%w: the series begins at %d ms, after its first point", ErrSeries, s.FromMS)
		}
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

// BucketSeries is a run of consecutive stats buckets, first being the
// number of counts[0] (an empty bucket had no demand), as a series of
// inspect.BucketMS steps covering exactly their time.
func BucketSeries(first int64, counts []inspect.Counts) Series {
	s := Series{StepMS: inspect.BucketMS}
	if len(counts) == 0 || first < 0 {
		return s
	}
	s.FromMS, s.EndMS = first*inspect.BucketMS, (first+int64(len(counts)))*inspect.BucketMS
	for i, c := range counts {
		if c.Acquired+c.Rejected+c.Errors > 0 {
			s.Points = append(s.Points, Point{T: time.UnixMilli((first + int64(i)) * inspect.BucketMS).UTC(), Counts: c})
		}
	}
	return s
}

// HistorySeries is a run of consecutive stats buckets (as BucketSeries)
// folded the way web/history records them: steps of stepMS (a multiple of
// inspect.BucketMS) from the epoch, a step at T holding the buckets a
// sample at T+stepMS had complete, so lagging one bucket, the newest step
// flushed while it fills; like the history, it does not say when within
// its first step the buckets begin. Tests use it to hold the replay of a history's
// steps against what the buckets say.
func HistorySeries(first int64, counts []inspect.Counts, stepMS int64) Series {
	s := Series{StepMS: stepMS, LagMS: inspect.BucketMS, EdgeMS: inspect.BucketMS}
	if len(counts) == 0 || first < 0 || stepMS < inspect.BucketMS || stepMS%inspect.BucketMS != 0 {
		return s
	}
	for i, c := range counts {
		raw := (first+int64(i))*inspect.BucketMS + s.LagMS
		at := raw / stepMS * stepMS
		if n := len(s.Points); n == 0 || s.Points[n-1].T.UnixMilli() != at {
			s.Points = append(s.Points, Point{T: time.UnixMilli(at).UTC()})
		}
		s.Points[len(s.Points)-1].Counts = s.Points[len(s.Points)-1].Counts.Add(c)
	}
	s.EndMS = (first+int64(len(counts)))*inspect.BucketMS + s.LagMS
	return s
}
