package whatif

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// literal decides attempts one at a time, transcribing the scripts line by
// line with no skipping or batching: the replay must agree with it on every
// step.
type literal struct {
	decide func(now int64) bool
}

func literalFor(lim Limiter, s Settings, startMS int64) literal {
	switch {
	case lim.Kind == inspect.KindTokenBucket:
		// tokenbucket_acquire.lua with ARGV[1] = 1.
		last, stored, maxP, interval := float64(startMS), float64(s.Rate), float64(s.Rate), s.IntervalMS
		return literal{func(now int64) bool {
			elapsed := float64(now) - last
			if elapsed > 0 {
				k := math.Floor(elapsed / interval)
				if stored+k >= maxP {
					stored = maxP
					last = float64(now)
				} else if k > 0 {
					stored = stored + k
					last = last + k*interval
				}
			}
			if stored > maxP {
				stored = maxP
			}
			if stored < 1 {
				return false
			}
			stored = stored - 1
			return true
		}}
	case lim.Kind == inspect.KindCounter || lim.Algorithm == inspect.AlgorithmFixedWindow:
		// counter_hit.lua: INCRBY, PEXPIRE on the first hit, count > limit
		// rejects; the key lives while now <= its expiry time.
		var count, expiresAt int64
		exists := false
		return literal{func(now int64) bool {
			if exists && now > expiresAt {
				exists = false
			}
			if !exists {
				count, exists = 0, true
				expiresAt = now + int64(s.IntervalMS)
			}
			count++
			return count <= s.Rate
		}}
	default:
		// redisson_limiter_acquire.lua, sliding: value and the grants zset.
		var scores []int64
		value := s.Rate
		return literal{func(now int64) bool {
			kept := scores[:0]
			for _, sc := range scores {
				if sc <= now-int64(s.IntervalMS) {
					value++
				} else {
					kept = append(kept, sc)
				}
			}
			scores = kept
			if value < 1 {
				return false
			}
			scores = append(scores, now)
			value--
			return true
		}}
	}
}

// TestReplayMatchesLiteralScripts replays random series (bursts, idle
// steps, several attempts per millisecond, sub-millisecond and fractional
// intervals) and compares every step with the literal transcription.
func TestReplayMatchesLiteralScripts(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	lims := []Limiter{bucket, counter, redissonFixed, sliding}
	for round := range 200 {
		lim := lims[round%len(lims)]
		step := []int64{200, 1000, 10_000}[rng.IntN(3)]
		set := Settings{Rate: 1 + rng.Int64N(30), IntervalMS: float64(1 + rng.Int64N(3*step))}
		if lim.Kind == inspect.KindTokenBucket && rng.IntN(2) == 0 {
			set.IntervalMS = 0.25 + rng.Float64()*float64(step)/10
		}
		demand := Series{StepMS: step}
		at := t0.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
		for range 1 + rng.IntN(30) {
			at = at.Add(time.Duration(step*(1+rng.Int64N(3)*rng.Int64N(2))) * time.Millisecond)
			n := rng.Int64N(step)
			if rng.IntN(4) == 0 {
				n = 0
			}
			demand.Points = append(demand.Points, Point{T: at, Counts: inspect.Counts{Acquired: n / 2, Rejected: n - n/2}})
		}
		fitted, err := fitIn(lim, demand, Series{}, discrete)
		if err != nil {
			t.Fatal(err)
		}
		res, err := fitted.Replay(set, step)
		if err != nil {
			t.Fatal(err)
		}
		ref := literalFor(lim, set, demand.Points[0].T.UnixMilli())
		for i, p := range demand.Points {
			n := p.Acquired + p.Rejected
			start := p.T.UnixMilli()
			var want int64
			for j := range n {
				if ref.decide(start + (2*j+1)*step/(2*n)) {
					want++
				}
			}
			if got := res.Points[i].Predicted.Admitted; got != want {
				t.Fatalf("round %d, %s at %+v, step %d ms: point %d (%d attempts) admitted %d, the scripts %d",
					round, lim.Kind+inspect.Kind(lim.Algorithm), set, step, i, n, got, want)
			}
		}
	}
}

// TestFluidFollowsTheScripts replays random busy series both ways: the
// fluid models (what a busy limiter's what-if runs) must admit what the
// scripts do, attempt by attempt, within 2 % over the series.
func TestFluidFollowsTheScripts(t *testing.T) {
	rng := rand.New(rand.NewPCG(38, 2))
	lims := []Limiter{bucket, counter, redissonFixed, sliding}
	for round := range 400 {
		lim := lims[round%len(lims)]
		step := []int64{200, 1000, 10_000}[rng.IntN(3)]
		set := Settings{Rate: 20 + rng.Int64N(200), IntervalMS: float64(100 + rng.Int64N(2*step))}
		if lim.Kind == inspect.KindTokenBucket {
			set.IntervalMS = 0.5 + rng.Float64()*20
		}
		demand := Series{StepMS: step}
		at := t0
		for range 10 + rng.IntN(30) {
			at = at.Add(time.Duration(step*(1+rng.Int64N(2)*rng.Int64N(2))) * time.Millisecond)
			// Around the limiter's rate, from a tenth of it to ten times.
			perMS := float64(set.Rate) / set.IntervalMS * math.Pow(10, 2*rng.Float64()-1)
			n := int64(perMS * float64(step))
			demand.Points = append(demand.Points, Point{T: at, Counts: inspect.Counts{Acquired: n}})
		}
		var got [2]int64
		for i, mode := range []int{discrete, fluid} {
			fitted, err := fitIn(lim, demand, Series{}, mode)
			if err != nil {
				t.Fatal(err)
			}
			res, err := fitted.Replay(set, 0)
			if err != nil {
				t.Fatal(err)
			}
			got[i] = res.Predicted.Admitted
		}
		if d := math.Abs(float64(got[1] - got[0])); d > 0.02*float64(got[0])+2 {
			t.Errorf("round %d, %s at %+v, %d ms steps: the scripts admit %d, the fluid %d",
				round, lim.Kind+inspect.Kind(lim.Algorithm), set, step, got[0], got[1])
		}
	}
}
