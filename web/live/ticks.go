package live

import (
	"sync/atomic"
	"time"
)

// TickBuckets are the upper bounds (seconds) of the tick duration
// histogram: a fast local tick (a few ms) to one that hits the sampler's
// timeout (2 s and more).
var TickBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .2, .5, 1, 2.5, 5}

// tickStats counts the sampler's ticks as they end; TickStats reads them.
type tickStats struct {
	count, failed, redisErrors atomic.Int64
	sumNanos                   atomic.Int64
	buckets                    [12]atomic.Int64 // per TickBuckets entry, not cumulative
}

func (t *tickStats) observe(d time.Duration) {
	t.count.Add(1)
	t.sumNanos.Add(int64(d))
	for i, ub := range TickBuckets {
		if d.Seconds() <= ub {
			t.buckets[i].Add(1)
			break
		}
	}
}

// TickStats are the sampler's counts since it started.
type TickStats struct {
	Ticks       int64 // ticks run
	Failed      int64 // ticks that could not read Redis
	RedisErrors int64 // failed Redis calls: ticks, full passes, node probes
	Sum         time.Duration
	// Buckets counts ticks by duration, cumulative: Buckets[ub] is the
	// ticks that took at most ub seconds (TickBuckets).
	Buckets map[float64]uint64
}

// TickStats reads the counts.
func (sm *Sampler) TickStats() TickStats {
	t := &sm.ticks
	out := TickStats{Ticks: t.count.Load(), Failed: t.failed.Load(), RedisErrors: t.redisErrors.Load(),
		Sum: time.Duration(t.sumNanos.Load()), Buckets: make(map[float64]uint64, len(TickBuckets))}
	var cum uint64
	for i, ub := range TickBuckets {
		cum += uint64(t.buckets[i].Load())
		out.Buckets[ub] = cum
	}
	return out
}
