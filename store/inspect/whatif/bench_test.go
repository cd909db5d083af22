package whatif

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// dayOf10s is a day of 10 s points (8,640): 20 to 80 attempts a second
// over the day, and every hour a 100 s burst of 300 a second; about 4.5
// million attempts. A limiter of 100 a second meets it.
func dayOf10s() Series {
	const step = 10_000
	s := Series{StepMS: step, Points: make([]Point, 0, 24*360)}
	for i := range 24 * 360 {
		perSecond := 50 + 30*math.Sin(2*math.Pi*float64(i)/(24*360))
		if i%360 < 10 {
			perSecond = 300
		}
		n := int64(perSecond * step / 1000)
		s.Points = append(s.Points, Point{T: t0.Add(time.Duration(i) * step * time.Millisecond), Counts: inspect.Counts{Acquired: n}})
	}
	return s
}

// BenchmarkReplayDay replays a day of 10 s points at 100 permits a second
// through each algorithm; the cost is in the admitted attempts (runs of
// rejections are skipped).
func BenchmarkReplayDay(b *testing.B) {
	day := dayOf10s()
	for _, bc := range []struct {
		name string
		lim  Limiter
		set  Settings
	}{
		{"token bucket", bucket, Settings{Rate: 200, IntervalMS: 10}},
		{"fixed window", counter, Settings{Rate: 100, IntervalMS: 1000}},
		{"sliding window", sliding, Settings{Rate: 100, IntervalMS: 1000}},
		{"sliding window 1h", sliding, Settings{Rate: 360_000, IntervalMS: 3_600_000}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := Request{Limiter: bc.lim, Proposed: bc.set, Demand: day}
			var res *Result
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if res, err = Replay(req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Attempts), "attempts/op")
			b.ReportMetric(float64(res.Predicted.Admitted), "admitted/op")
		})
	}
}

// demoHour is an hour of 10 s points of the demo's demand:bucket: about
// 650 attempts a second at a bucket of 500 permits, one every 2 ms.
func demoHour() Series {
	s := Series{StepMS: 10_000, Points: make([]Point, 0, 360)}
	for i := range 360 {
		s.Points = append(s.Points, Point{T: t0.Add(time.Duration(i) * 10 * time.Second),
			Counts: inspect.Counts{Acquired: 5000, Rejected: 1500 + int64(i%7)*10}})
	}
	return s
}

// BenchmarkReplayBusyHour is one what-if of a busy hour (the demo's bucket
// at its own rate): what a viewer's request cost the console before any
// cache.
func BenchmarkReplayBusyHour(b *testing.B) {
	req := Request{Limiter: Limiter{Kind: inspect.KindTokenBucket, Current: Settings{Rate: 500, IntervalMS: 2}},
		Proposed: Settings{Rate: 500, IntervalMS: 2}, Demand: demoHour()}
	var res *Result
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if res, err = Replay(req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(res.Attempts), "attempts/op")
}

// BenchmarkFittedReplayBusyHour is one more proposal on a busy hour already
// fitted: what each further what-if of the same flush costs (Runner).
func BenchmarkFittedReplayBusyHour(b *testing.B) {
	lim := Limiter{Kind: inspect.KindTokenBucket, Current: Settings{Rate: 500, IntervalMS: 2}}
	fitted, err := Fit(lim, demoHour(), Series{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fitted.Replay(Settings{Rate: 400, IntervalMS: 2.5}, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitNoisyWindows fits the worst the fit meets: a counter's
// three minutes of 200 ms buckets whose outcomes no arrivals reproduce
// (admissions drawn at random), so every step goes back over the window.
func BenchmarkFitNoisyWindows(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]inspect.Counts, 900)
	for i := range counts {
		n := 5 + rng.Int64N(10)
		a := rng.Int64N(n + 1)
		counts[i] = inspect.Counts{Acquired: a, Rejected: n - a}
	}
	demand := BucketSeries(t0.UnixMilli()/inspect.BucketMS, counts)
	lim := Limiter{Kind: inspect.KindCounter, Current: Settings{Rate: 20, IntervalMS: 1000}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fit(lim, demand, Series{}); err != nil {
			b.Fatal(err)
		}
	}
}
