package whatif

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// busyHour is an hour of the day's 10 s points: a few hundred thousand
// attempts, a bucket of 200 permits one every 10 ms meeting them.
func busyHour() (Key, Demand, *atomic.Int64, Series) {
	day := dayOf10s()
	hour := Series{StepMS: day.StepMS, Points: day.Points[:360], LagMS: inspect.BucketMS, EdgeMS: inspect.BucketMS}
	key := Key{Name: "rl", Through: hour.Points[359].T.UnixMilli() + 5000,
		Limiter: Limiter{Kind: inspect.KindTokenBucket, Current: Settings{Rate: 200, IntervalMS: 10}}}
	hour.EndMS = key.Through
	reads := &atomic.Int64{}
	return key, func(context.Context) (Series, Series, error) {
		reads.Add(1)
		return hour, Series{}, nil
	}, reads, hour
}

// N viewers asking the same what-if at once cost one read, one fit and one
// replay; another proposal at the same flush one more replay; the next
// flush one more fit.
func TestRunnerReplaysOncePerFlushAndProposal(t *testing.T) {
	var r Runner
	key, demand, reads, hour := busyHour()
	proposal := Settings{Rate: 100, IntervalMS: 10}
	ask := func(key Key, set Settings, n int) []*Result {
		out := make([]*Result, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				res, err := r.Replay(t.Context(), key, set, demand)
				if err != nil {
					t.Error(err)
				}
				out[i] = res
			})
		}
		wg.Wait()
		return out
	}
	results := ask(key, proposal, 20)
	for _, res := range results[1:] {
		if res != results[0] {
			t.Fatal("viewers of one what-if got different answers")
		}
	}
	if st := r.Stats(); st.Fits != 1 || st.Replays != 1 || reads.Load() != 1 {
		t.Fatalf("20 identical what-ifs: %+v, %d reads; want 1 fit, 1 replay, 1 read", st, reads.Load())
	}
	ask(key, Settings{Rate: 300, IntervalMS: 10}, 20)
	if st := r.Stats(); st.Fits != 1 || st.Replays != 2 {
		t.Fatalf("another proposal at the same flush: %+v; want 1 fit, 2 replays", st)
	}
	next := key
	next.Through += 10_000
	ask(next, proposal, 20)
	if st := r.Stats(); st.Fits != 2 || st.Replays != 3 || reads.Load() != 2 {
		t.Fatalf("the next flush: %+v, %d reads; want 2 fits, 3 replays, 2 reads", st, reads.Load())
	}
	// The answer is the package's Replay of the same demand.
	want, err := Replay(Request{Limiter: key.Limiter, Proposed: proposal, Demand: hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := results[0]; got.Predicted != want.Predicted || *got.Check != *want.Check {
		t.Errorf("runner %+v %+v, Replay %+v %+v", got.Predicted, got.Check, want.Predicted, want.Check)
	}
	// A proposal the limiter refuses costs nothing.
	_, err = r.Replay(t.Context(), Key{Name: "other", Through: 1, Limiter: key.Limiter}, Settings{Rate: 0, IntervalMS: 10}, demand)
	if inspect.CodeOf(err) != inspect.CodeInvalid || reads.Load() != 2 || r.Stats().Fits != 2 {
		t.Fatalf("rate 0: %v, %+v", err, r.Stats())
	}
}

// Distinct what-ifs at once never run more than Slots at a time: Queue
// more wait, the rest are refused with ErrBusy at once.
func TestRunnerBoundsConcurrentReplays(t *testing.T) {
	r := Runner{Slots: 2, Queue: 4, MaxWait: time.Minute}
	key, demand, _, _ := busyHour()
	if _, err := r.Replay(t.Context(), key, Settings{Rate: 1, IntervalMS: 10}, demand); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	r.hook = func() { <-release }
	const n = 20
	var ok, busy atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := r.Replay(t.Context(), key, Settings{Rate: int64(10 + i), IntervalMS: 10}, demand)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, ErrBusy):
				if e := inspect.ErrorOf(err); e.Code != inspect.CodeLimited || e.RetryAfter <= 0 {
					t.Errorf("refused with %v (%s, retry after %v), want CodeLimited and a time to retry after", err, e.Code, e.RetryAfter)
				}
				busy.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	// Every request has either a slot, a place in the queue or its refusal.
	deadline := time.Now().Add(time.Minute)
	for r.Stats().Running != 2 || r.Waiting() != 4 || busy.Load() != n-6 {
		if time.Now().After(deadline) {
			t.Fatalf("%+v, %d waiting, %d refused: want 2 running, 4 waiting, %d refused", r.Stats(), r.Waiting(), busy.Load(), n-6)
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if st := r.Stats(); st.MaxRunning != 2 || ok.Load() != 6 || busy.Load() != n-6 || st.Replays != 1+6 || st.Fits != 1 {
		t.Fatalf("%+v, %d answered, %d refused: want at most 2 at once, 6 answered, %d refused, 1 fit", st, ok.Load(), busy.Load(), n-6)
	}
}
