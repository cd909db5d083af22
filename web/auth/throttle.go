package auth

import (
	"sync"
	"sync/atomic"
	"time"
)

// Throttle is a small token bucket: burst events at once, then rate per
// second. The console records failed sign-ins through one, so a flood of
// bad tokens cannot push real records out of the capped audit stream.
type Throttle struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
	burst  float64
	rate   float64

	suppressed atomic.Int64
}

// NewThrottle admits burst events at once and perSecond after that.
func NewThrottle(burst, perSecond float64) *Throttle {
	return &Throttle{tokens: burst, burst: burst, rate: perSecond}
}

// Allow takes one event at now; false (and counted) when over the rate.
func (t *Throttle) Allow(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() {
		t.tokens = min(t.burst, t.tokens+now.Sub(t.last).Seconds()*t.rate)
	}
	t.last = now
	if t.tokens < 1 {
		t.suppressed.Add(1)
		return false
	}
	t.tokens--
	return true
}

// Suppressed counts the events Allow refused.
func (t *Throttle) Suppressed() int64 { return t.suppressed.Load() }
