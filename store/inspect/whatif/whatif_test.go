package whatif

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
)

// t0 is a whole second, so the hand computations below can count from 0.
var t0 = time.UnixMilli(1_700_000_000_000).UTC()

// perSecond is demand of n[i] attempts in second i (1 s steps from t0),
// recorded as all acquired: the replay ignores how they were decided.
func perSecond(n ...int64) Series {
	s := Series{StepMS: 1000}
	for i, v := range n {
		s.Points = append(s.Points, Point{T: t0.Add(time.Duration(i) * time.Second), Counts: inspect.Counts{Acquired: v}})
	}
	return s
}

var (
	bucket        = Limiter{Kind: inspect.KindTokenBucket}
	counter       = Limiter{Kind: inspect.KindCounter}
	redissonFixed = Limiter{Kind: inspect.KindRedissonLimiter, Algorithm: inspect.AlgorithmFixedWindow}
	sliding       = Limiter{Kind: inspect.KindRedissonLimiter, Algorithm: inspect.AlgorithmSlidingWindow}
)

// TestReplayHandComputed checks each algorithm against outcomes worked out
// by hand, per second. Unless said otherwise the demand is 10 attempts a
// second for 3 s: by the arrival model they come at 50, 150, ..., 2950 ms.
// Each kind is replayed at "today's" settings and at a halved and a doubled
// rate.
func TestReplayHandComputed(t *testing.T) {
	tenPerSecond := perSecond(10, 10, 10)
	// 1000 attempts in 200 ms: five in each millisecond 0..199.
	dense := Series{StepMS: 200, Points: []Point{{T: t0, Counts: inspect.Counts{Acquired: 900, Rejected: 100}}}}
	cases := []struct {
		name     string
		lim      Limiter
		set      Settings
		demand   Series
		admitted []int64 // per point
	}{
		// 4 permits, one every 200 ms, full at 0. Taken at 50..650 (the
		// refills at 200, 400 and 600 keep it from emptying), empty at 750,
		// refilled at 800 for 850; from then on a refill every 200 ms meets
		// every other attempt: 1050 yes, 1150 no, ...
		{"token bucket today", bucket, Settings{4, 200}, tenPerSecond, []int64{8, 5, 5}},
		// 2 permits, one every 400 ms: 50 and 150 empty it; then one
		// attempt in four, at 450, 850, 1250, ..., 2850.
		{"token bucket halved", bucket, Settings{2, 400}, tenPerSecond, []int64{4, 2, 3}},
		// 8 permits, one every 100 ms: each attempt finds a whole interval
		// since the last, the refill caps the bucket and restarts its clock.
		{"token bucket doubled", bucket, Settings{8, 100}, tenPerSecond, []int64{10, 10, 10}},
		// Five attempts at each of ms 0..199: three taken at 0, then one at
		// 50, 100 and 150; the rest skip to the next refill.
		{"token bucket dense", bucket, Settings{3, 50}, dense, []int64{6}},
		// Windows open at 50 (alive to 1050 inclusive), 1150 and 2250; each
		// admits its first 4 attempts.
		{"counter today", counter, Settings{4, 1000}, tenPerSecond, []int64{4, 4, 4}},
		{"counter halved", counter, Settings{2, 1000}, tenPerSecond, []int64{2, 2, 2}},
		// 8 of the 11 attempts of the first two windows (1050 and 1950 are
		// rejected, 850 and 950 too), all 8 of the third.
		{"counter doubled", counter, Settings{8, 1000}, tenPerSecond, []int64{8, 8, 8}},
		// 500 ms windows open at 50, 650, 1250, 1850, 2450: six attempts
		// each, 4 admitted; the second second has 1050 and 1150 of the
		// second window, the third 2050 and 2150 of the fourth.
		{"counter window halved", counter, Settings{4, 500}, tenPerSecond, []int64{8, 6, 6}},
		// Windows of 50 ms opened at 0, 51, 102 and 153 admit 3 each.
		{"counter dense", counter, Settings{3, 50}, dense, []int64{12}},
		{"redisson fixed window today", redissonFixed, Settings{4, 1000}, tenPerSecond, []int64{4, 4, 4}},
		// 4 grants at 50..350; each returns 1000 ms later, so 1050..1350
		// and 2050..2350 are admitted, the rest of each second rejected.
		{"sliding today", sliding, Settings{4, 1000}, tenPerSecond, []int64{4, 4, 4}},
		{"sliding halved", sliding, Settings{2, 1000}, tenPerSecond, []int64{2, 2, 2}},
		{"sliding doubled", sliding, Settings{8, 1000}, tenPerSecond, []int64{8, 8, 8}},
		// Grants return after 500 ms: 450 is refused, 550 gets 50's permit;
		// four of every five attempts, where the fixed window gave 20 of 30.
		{"sliding window halved", sliding, Settings{4, 500}, tenPerSecond, []int64{8, 8, 8}},
		// Three at ms 0, three more at 50, 100 and 150 as they return.
		{"sliding dense", sliding, Settings{3, 50}, dense, []int64{12}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Replay(Request{Limiter: tc.lim, Proposed: tc.set, Demand: tc.demand, PointMS: tc.demand.StepMS})
			if err != nil {
				t.Fatal(err)
			}
			var got, wantRejected []int64
			var attempts, admitted int64
			for i, p := range res.Points {
				got = append(got, p.Predicted.Admitted)
				demand := tc.demand.Points[i].Acquired + tc.demand.Points[i].Rejected
				wantRejected = append(wantRejected, demand-tc.admitted[i])
				if p.Predicted.Rejected != demand-p.Predicted.Admitted || p.Attempts != demand {
					t.Errorf("point %d: %+v, want %d attempts split into admitted and rejected", i, p, demand)
				}
				attempts += demand
				admitted += tc.admitted[i]
			}
			if !slices.Equal(got, tc.admitted) {
				t.Fatalf("admitted per point %v, want %v (rejected %v)", got, tc.admitted, wantRejected)
			}
			if res.Attempts != attempts || res.Predicted.Admitted != admitted || res.Predicted.Rejected != attempts-admitted || res.Predicted.Low > attempts-admitted || res.Predicted.High < attempts-admitted {
				t.Errorf("totals %d attempts, predicted %+v; want %d, {%d %d}", res.Attempts, res.Predicted, attempts, admitted, attempts-admitted)
			}
		})
	}
}

// TestReplayPointsAndTotals checks the answer's shape: actual outcomes are
// the recorded ones, steps fold into minute points (a gap leaves none),
// errors are not demand, and the JSON names are the API's.
func TestReplayPointsAndTotals(t *testing.T) {
	minute := t0.Truncate(time.Minute)
	at := func(s int) time.Time { return minute.Add(time.Duration(s) * time.Second) }
	demand := Series{StepMS: 10_000, Points: []Point{
		{T: at(0), Counts: inspect.Counts{Acquired: 5, Rejected: 1, Errors: 7}},
		{T: at(50), Counts: inspect.Counts{Acquired: 3}},
		{T: at(180), Counts: inspect.Counts{Acquired: 2, Rejected: 4}},
	}}
	res, err := Replay(Request{Limiter: sliding, Proposed: Settings{Rate: 100, IntervalMS: 1000}, Demand: demand})
	if err != nil {
		t.Fatal(err)
	}
	want := []ResultPoint{
		{T: minute, Attempts: 9, Actual: Outcome{8, 1}, Predicted: Prediction{9, 0, 0, 0}},
		{T: at(180), Attempts: 6, Actual: Outcome{2, 4}, Predicted: Prediction{6, 0, 0, 0}},
	}
	if !slices.Equal(res.Points, want) {
		t.Fatalf("points %+v, want %+v", res.Points, want)
	}
	if res.SpanS != 190 || res.Attempts != 15 || res.Actual != (Outcome{10, 5}) || res.Predicted != (Prediction{15, 0, 0, 0}) || res.LowerBound {
		t.Fatalf("result %+v", res)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"span_s", "attempts", "actual", "predicted", "points", "lower_bound"} {
		if _, ok := generic[k]; !ok {
			t.Errorf("JSON %s has no %q", raw, k)
		}
	}
	p0 := generic["points"].([]any)[0].(map[string]any)
	if p0["t"] != "2023-11-14T22:13:00Z" || p0["predicted"].(map[string]any)["admitted"] != 9.0 {
		t.Errorf("first point's JSON %v", p0)
	}
}

// TestReplayLowerBound: a limiter whose rejections other clients make in
// their own scripts is replayed as a lower bound.
func TestReplayLowerBound(t *testing.T) {
	lim := sliding
	lim.RejectionsHidden = true
	res, err := Replay(Request{Limiter: lim, Proposed: Settings{1, 1000}, Demand: perSecond(3)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.LowerBound || res.Predicted != (Prediction{1, 2, 2, 2}) {
		t.Fatalf("result %+v, want a lower bound admitting 1 of 3", res)
	}
	empty, err := Replay(Request{Limiter: lim, Proposed: Settings{1, 1000}, Demand: Series{StepMS: 10_000}})
	if err != nil || !empty.LowerBound || empty.Points == nil || empty.Attempts != 0 {
		t.Fatalf("empty series: %+v, %v", empty, err)
	}
}

// TestReplayRefusesWhatTheLimiterRefuses: settings the limiter's own edit
// would refuse are CodeInvalid naming the parameter, so the console
// answers 400 naming it; a limiter that cannot be replayed is
// CodeUnsupported.
func TestReplayRefusesWhatTheLimiterRefuses(t *testing.T) {
	perClient := sliding
	perClient.PerClient = true
	cases := []struct {
		name  string
		lim   Limiter
		set   Settings
		field string // "" when the error must not be a validation error
		code  inspect.Code
	}{
		{"bucket rate 0", bucket, Settings{0, 10}, "rate", inspect.CodeInvalid},
		{"bucket rate above 2^53", bucket, Settings{store.MaxBucketCapacity + 1, 10}, "rate", inspect.CodeInvalid},
		{"bucket interval 0", bucket, Settings{10, 0}, "interval_ms", inspect.CodeInvalid},
		{"bucket interval below a microsecond", bucket, Settings{10, 0.0001}, "interval_ms", inspect.CodeInvalid},
		{"bucket interval NaN", bucket, Settings{10, math.NaN()}, "interval_ms", inspect.CodeInvalid},
		{"bucket interval infinite", bucket, Settings{10, math.Inf(1)}, "interval_ms", inspect.CodeInvalid},
		{"counter rate 0", counter, Settings{0, 1000}, "rate", inspect.CodeInvalid},
		{"counter fractional window", counter, Settings{5, 1.5}, "interval_ms", inspect.CodeInvalid},
		{"counter window 0", counter, Settings{5, 0}, "interval_ms", inspect.CodeInvalid},
		{"redisson rate above uint32", sliding, Settings{1 << 32, 1000}, "rate", inspect.CodeInvalid},
		{"redisson fractional interval", redissonFixed, Settings{5, 0.5}, "interval_ms", inspect.CodeInvalid},
		{"redisson interval over a year", sliding, Settings{5, 366 * 24 * 3600 * 1000}, "interval_ms", inspect.CodeInvalid},
		{"per-client redisson", perClient, Settings{5, 1000}, "", inspect.CodeUnsupported},
		{"a lock", Limiter{Kind: inspect.KindReentrant}, Settings{5, 1000}, "", inspect.CodeUnsupported},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Replay(Request{Limiter: tc.lim, Proposed: tc.set, Demand: perSecond(1)})
			e := inspect.ErrorOf(err)
			if e == nil || e.Code != tc.code || e.Field != tc.field {
				t.Fatalf("error %v (%#v), want code %q naming field %q", err, e, tc.code, tc.field)
			}
			if tc.field != "" && !strings.HasPrefix(e.Message, tc.field+" ") {
				t.Errorf("message %q does not start with the field %q", e.Message, tc.field)
			}
			if tc.code == inspect.CodeUnsupported && !errors.Is(err, ErrUnsupported) {
				t.Errorf("error %v does not match ErrUnsupported", err)
			}
		})
	}
	// The same settings are fine where the limiter takes them.
	for _, ok := range []struct {
		lim Limiter
		set Settings
	}{{bucket, Settings{1, 0.5}}, {counter, Settings{1, 1}}, {sliding, Settings{math.MaxUint32, 1}}} {
		if _, err := Replay(Request{Limiter: ok.lim, Proposed: ok.set, Demand: perSecond(1)}); err != nil {
			t.Errorf("%v at %+v: %v", ok.lim.Kind, ok.set, err)
		}
	}
}

// TestReplayRefusesBadSeries: a malformed series is ErrSeries, not a user
// error.
func TestReplayRefusesBadSeries(t *testing.T) {
	overlap := perSecond(1, 1)
	overlap.Points[1].T = overlap.Points[0].T.Add(999 * time.Millisecond)
	negative := perSecond(1)
	negative.Points[0].Rejected = -1
	tooMany := perSecond(MaxPointAttempts)
	tooMany.Points[0].Rejected = 1
	for name, s := range map[string]Series{
		"no step":     {Points: perSecond(1).Points},
		"step > day":  {StepMS: MaxStepMS + 1},
		"overlapping": overlap,
		"negative":    negative,
		"too many":    tooMany,
		"before 1970": {StepMS: 1000, Points: []Point{{T: time.UnixMilli(-1000)}}},
	} {
		if _, err := Replay(Request{Limiter: bucket, Proposed: Settings{1, 1}, Demand: s}); !errors.Is(err, ErrSeries) || inspect.CodeOf(err) == inspect.CodeInvalid {
			t.Errorf("%s: error %v, want ErrSeries", name, err)
		}
	}
}

// TestFoldBuckets folds 200 ms stats buckets into steps, in time order.
func TestFoldBuckets(t *testing.T) {
	b0 := t0.UnixMilli() / inspect.BucketMS
	buckets := map[int64]inspect.Counts{
		b0 + 6: {Acquired: 1, Rejected: 2},
		b0:     {Acquired: 3},
		b0 + 4: {Acquired: 1, Errors: 1},
		b0 + 5: {Rejected: 4},
	}
	s, err := FoldBuckets(buckets, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{
		{T: t0, Counts: inspect.Counts{Acquired: 4, Errors: 1}},
		{T: t0.Add(time.Second), Counts: inspect.Counts{Acquired: 1, Rejected: 6}},
	}
	if s.StepMS != 1000 || !slices.Equal(s.Points, want) {
		t.Fatalf("series %+v, want %+v", s, want)
	}
	if _, err := FoldBuckets(buckets, 300); !errors.Is(err, ErrSeries) {
		t.Fatalf("a 300 ms step: %v, want ErrSeries", err)
	}
}

// TestSplice: finer demand replaces the steps it covers; the step it
// begins in keeps what the buckets do not hold of it, unless its counts
// say the two disagree; nothing past the coarse series' end is replayed.
func TestSplice(t *testing.T) {
	at := func(ms int64) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	coarse := Series{StepMS: 10_000, LagMS: 200, EndMS: t0.UnixMilli() + 25_000, Points: []Point{
		{T: at(0), Counts: inspect.Counts{Acquired: 100, Rejected: 10}},
		{T: at(10_000), Counts: inspect.Counts{Acquired: 50, Rejected: 40}},
		{T: at(20_000), Counts: inspect.Counts{Acquired: 5}},
	}}
	// Buckets from 14.8 s (true time) to 30 s: 1 acquired, 1 rejected each.
	var counts []inspect.Counts
	for range (30_000 - 14_800) / inspect.BucketMS {
		counts = append(counts, inspect.Counts{Acquired: 1, Rejected: 1})
	}
	fine := BucketSeries((t0.UnixMilli()+14_800)/inspect.BucketMS, counts)
	type got struct{ start, width, n, acquired int64 }
	var steps []got
	for _, s := range splice(coarse, fine) {
		steps = append(steps, got{s.start - t0.UnixMilli(), s.width, s.n, s.acquired})
	}
	// The second step [9.8 s, 19.8 s) keeps 90 - 2*25 attempts over its
	// first 5 s; buckets to 24.8 s, where the coarse series ends.
	want := []got{{-200, 10_000, 110, 100}, {9_800, 5_000, 40, 25}}
	for ms := int64(14_800); ms < 24_800; ms += inspect.BucketMS {
		want = append(want, got{ms, inspect.BucketMS, 2, 1})
	}
	if !slices.Equal(steps, want) {
		t.Fatalf("steps %v\nwant %v", steps, want)
	}
	// Buckets holding more than the step they begin in: from its end.
	for i := range counts {
		counts[i] = inspect.Counts{Acquired: 5, Rejected: 5}
	}
	steps = steps[:0]
	for _, s := range splice(coarse, BucketSeries((t0.UnixMilli()+14_800)/inspect.BucketMS, counts)) {
		steps = append(steps, got{s.start - t0.UnixMilli(), s.width, s.n, s.acquired})
	}
	if len(steps) != 2+25 || steps[1] != (got{9_800, 10_000, 90, 50}) || steps[2].start != 19_800 {
		t.Fatalf("steps %v, want the second whole and buckets from 19.8 s", steps)
	}
}

// TestFitSpliceKeepsTheStateOfTheSteps: five minutes of a bucket kept
// empty by demand above its rate, the last minute in 200 ms buckets. The
// buckets begin with the bucket empty, as the steps before left it: their
// even replay from there is what happened, so the band stays as narrow as
// the models within 2 % make it (a replay of the buckets alone from an
// idle, full bucket is 500 permits, 5.5 % of their rejections, off, and
// would widen it by that on each side).
func TestFitSpliceKeepsTheStateOfTheSteps(t *testing.T) {
	const n = 5 * 60 * 1000 / inspect.BucketMS
	counts := make([]inspect.Counts, n)
	for i := range counts {
		counts[i] = inspect.Counts{Acquired: 100, Rejected: 30} // 500 a second admitted of 650
	}
	first := t0.UnixMilli() / inspect.BucketMS
	coarse := HistorySeries(first, counts, 10_000)
	fine := BucketSeries(first+n-300, counts[n-300:])
	lim := Limiter{Kind: inspect.KindTokenBucket, Current: Settings{Rate: 500, IntervalMS: 2}}
	res, err := Replay(Request{Limiter: lim, Proposed: lim.Current, Demand: coarse, Fine: fine})
	if err != nil {
		t.Fatal(err)
	}
	p, c := res.Predicted, res.Check
	if res.FineS < 59 || !c.Trusted() || float64(p.High-p.Low) > 0.04*float64(p.Rejected) {
		t.Fatalf("fine %v s, predicted %+v, check %+v: want the last minute from buckets, the check within 2 %% and a band within 4 %%", res.FineS, p, c)
	}
}
