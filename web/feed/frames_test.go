package feed

import (
	"encoding/json"
	"testing"

	"github.com/lockwarden/lockwarden/store/inspect"
)

func core(at int64, lims map[string]inspect.Counts, pttl map[string]int64) statsCore {
	locks := map[string]inspect.Counts{}
	for n := range pttl {
		locks[n] = inspect.Counts{}
	}
	return statsCore{Type: "stats", At: at, Limiters: lims, Locks: locks, Available: map[string]int64{}, PTTLMS: pttl}
}

func decodeDelta(t *testing.T, b []byte) statsDelta {
	t.Helper()
	var d statsDelta
	if err := json.Unmarshal(b, &d); err != nil || !d.Delta {
		t.Fatalf("delta %s: %v", b, err)
	}
	return d
}

// TestDeltaOnlyChanges: after the first frame a delta carries only objects
// whose numbers changed, a lease only when it left its countdown, and the
// names that are gone.
func TestDeltaOnlyChanges(t *testing.T) {
	var d deltaState
	lims := map[string]inspect.Counts{"a": {Acquired: 1}, "b": {Acquired: 2}, "c": {}}
	if b, err := d.next(core(1000, lims, map[string]int64{"l1": 30000, "l2": -1, "l3": 5000})); b != nil || err != nil {
		t.Fatalf("first frame must be sent whole, got a delta %s %v", b, err)
	}
	// 200 ms later: b changed; l1 counted down as predicted; l3 was renewed;
	// c and l2 vanished.
	b, err := d.next(core(1200, map[string]inspect.Counts{"a": {Acquired: 1}, "b": {Acquired: 3}},
		map[string]int64{"l1": 29795, "l3": 30000}))
	if err != nil {
		t.Fatal(err)
	}
	f := decodeDelta(t, b)
	if len(f.Limiters) != 1 || f.Limiters["b"].Acquired != 3 {
		t.Errorf("limiters %v, want only b", f.Limiters)
	}
	if len(f.PTTLMS) != 1 || f.PTTLMS["l3"] != 30000 {
		t.Errorf("pttl_ms %v, want only the renewed l3", f.PTTLMS)
	}
	if len(f.Locks) != 0 {
		t.Errorf("locks %v, want none changed", f.Locks)
	}
	if len(f.Removed) != 2 || f.Removed[0] != "c" || f.Removed[1] != "l2" {
		t.Errorf("removed %v, want [c l2]", f.Removed)
	}
	// A slow drift is sent once it exceeds the slack, measured from the
	// value last sent, not from the last frame.
	b, _ = d.next(core(1400, map[string]inspect.Counts{"a": {Acquired: 1}, "b": {Acquired: 3}},
		map[string]int64{"l1": 29595 - pttlSlackMS - 1, "l3": 29800}))
	f = decodeDelta(t, b)
	if len(f.Limiters) != 0 || len(f.PTTLMS) != 1 || f.PTTLMS["l1"] == 0 || len(f.Removed) != 0 {
		t.Errorf("third frame %+v", f)
	}
	// A returning name is sent again.
	b, _ = d.next(core(1600, map[string]inspect.Counts{"a": {Acquired: 1}, "b": {Acquired: 3}, "c": {}},
		map[string]int64{"l1": 29000, "l3": 29600}))
	if f = decodeDelta(t, b); len(f.Limiters) != 1 || len(f.Removed) != 0 {
		t.Errorf("fourth frame %+v", f)
	}
}

// Waiter counts travel like availability: a delta carries the locks whose
// count changed, 0 for a lock whose last waiter left; the cycle count is
// in every frame.
func TestDeltaWaiters(t *testing.T) {
	var d deltaState
	pttl := map[string]int64{"l1": -1, "l2": -1, "l3": -1}
	withWaiters := func(at int64, w map[string]int64, cycles int) statsCore {
		c := core(at, map[string]inspect.Counts{}, pttl)
		c.Waiters, c.Deadlocks = w, cycles
		return c
	}
	if b, _ := d.next(withWaiters(1000, map[string]int64{"l1": 2, "l2": 1}, 0)); b != nil {
		t.Fatal("first frame must be sent whole")
	}
	b, err := d.next(withWaiters(1200, map[string]int64{"l1": 2, "l3": 1}, 1))
	if err != nil {
		t.Fatal(err)
	}
	f := decodeDelta(t, b)
	if len(f.Waiters) != 2 || f.Waiters["l2"] != 0 || f.Waiters["l3"] != 1 {
		t.Errorf("waiters %v, want l2 gone (0) and l3 joined (1), l1 unchanged left out", f.Waiters)
	}
	if f.Deadlocks != 1 {
		t.Errorf("deadlocks %d, want 1", f.Deadlocks)
	}
	b, _ = d.next(withWaiters(1400, map[string]int64{"l1": 2, "l3": 1}, 1))
	if f = decodeDelta(t, b); len(f.Waiters) != 0 || f.Deadlocks != 1 {
		t.Errorf("unchanged: waiters %v, deadlocks %d", f.Waiters, f.Deadlocks)
	}
}
