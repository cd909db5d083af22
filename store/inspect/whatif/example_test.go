package whatif_test

import (
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/whatif"
)

// A token bucket of 4 permits, one every 200 ms, met 10 attempts a second
// for three seconds and rejected 12 of them; at half its rate it would
// have rejected 21.
func ExampleReplay() {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	demand := whatif.Series{StepMS: 1000}
	for i := range 3 {
		demand.Points = append(demand.Points, whatif.Point{
			T:      start.Add(time.Duration(i) * time.Second),
			Counts: inspect.Counts{Acquired: []int64{8, 5, 5}[i], Rejected: []int64{2, 5, 5}[i]},
		})
	}
	res, err := whatif.Replay(whatif.Request{
		Limiter:  whatif.Limiter{Kind: inspect.KindTokenBucket, Current: whatif.Settings{Rate: 4, IntervalMS: 200}},
		Proposed: whatif.Settings{Rate: 2, IntervalMS: 400},
		Demand:   demand,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%g s, %d attempts: rejected %d, would have rejected %d\n",
		res.SpanS, res.Attempts, res.Actual.Rejected, res.Predicted.Rejected)
	_, err = whatif.Replay(whatif.Request{
		Limiter:  whatif.Limiter{Kind: inspect.KindRedissonLimiter},
		Proposed: whatif.Settings{Rate: 2, IntervalMS: 0.5},
		Demand:   demand,
	})
	fmt.Println(err)
	// Output:
	// 3 s, 30 attempts: rejected 12, would have rejected 21
	// interval_ms must be a whole number of milliseconds between 1 and a year, got 0.5
}
