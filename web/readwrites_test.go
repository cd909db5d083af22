package web

import (
	"testing"
	"time"
)

// A change made through the API is in the console's lists from the very
// next request: the action re-reads what it changed before it answers,
// instead of leaving the lists to the next tick. The ticks here are a
// second apart, so a list served from the tick's snapshot alone would
// still show the old state.
func TestAPIChangesVisibleOnNextRequest(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.TickInterval = time.Second })
	lock := e.prefix + "stuck"
	e.makeLock(lock, "w1", 1, time.Minute)
	rl := e.prefix + "rl"
	e.makeBucket(rl, 100, "10")
	e.synced()

	listed := func() (locks map[string]bool, rates map[string]int64) {
		var ls struct{ Locks []apiLock }
		e.getJSON("/api/locks", 200, &ls)
		var lims struct{ Limiters []apiLimiter }
		e.getJSON("/api/limiters", 200, &lims)
		locks, rates = map[string]bool{}, map[string]int64{}
		for _, l := range ls.Locks {
			locks[l.Name] = true
		}
		for _, l := range lims.Limiters {
			rates[l.Name] = l.Rate
		}
		return locks, rates
	}
	if locks, rates := listed(); !locks[lock] || rates[rl] != 100 {
		t.Fatalf("before: locks %v, rates %v", locks, rates)
	}

	e.sendJSON("POST", "/api/locks/"+esc(lock)+"/force-unlock", `{"holder":"`+holderID("w1")+`","reason":"r"}`, 200, nil)
	e.sendJSON("PUT", "/api/limiters/"+esc(rl), `{"rate":20,"interval_ms":5,"reason":"test"}`, 200, nil)
	locks, rates := listed()
	if locks[lock] {
		t.Errorf("GET /api/locks right after force-unlock still lists %s", lock)
	}
	if rates[rl] != 20 {
		t.Errorf("GET /api/limiters right after the edit: rate %d, want 20", rates[rl])
	}
}
