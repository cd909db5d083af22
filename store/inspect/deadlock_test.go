package inspect

import (
	"strings"
	"testing"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Actors of the hand-built graphs: client UUIDs with an owner.
const (
	actorA = "aaaaaaaa-0000-4000-8000-000000000001:a"
	actorB = "bbbbbbbb-0000-4000-8000-000000000002:b"
	actorC = "cccccccc-0000-4000-8000-000000000003:c"
)

// graphLock is a lock held by holder, acquired at acq, with waiters whose
// owners are given (their ids are the owner's first letter and the lock).
func graphLock(name, holder string, acq int64, waiting ...string) LockInfo {
	l := LockInfo{Name: name, Kind: KindReentrant, Holders: []Holder{{ID: holder, Count: 1, AcquiredMS: acq}}}
	for i, o := range waiting {
		l.Waiters = append(l.Waiters, Waiter{ID: o[:1] + "@" + name, Owner: o, Position: i + 1})
	}
	l.WaitersTotal = int64(len(l.Waiters))
	return l
}

func cycleString(d Deadlock) string {
	var parts []string
	for _, s := range d.Cycle {
		parts = append(parts, s.Lock+"("+s.Holder[:1]+")->"+s.WaitsFor)
	}
	return strings.Join(parts, " ")
}

func TestDeadlocksTwoCycle(t *testing.T) {
	got := Deadlocks([]LockInfo{graphLock("L2", actorB, 200, actorA), graphLock("L1", actorA, 100, actorB)})
	if len(got) != 1 {
		t.Fatalf("found %d deadlocks, want 1: %+v", len(got), got)
	}
	if s := cycleString(got[0]); s != "L1(a)->L2 L2(b)->L1" {
		t.Errorf("cycle %s, want L1(a)->L2 L2(b)->L1", s)
	}
	st := got[0].Cycle
	if st[0].Waiter != "a@L2" || st[1].Waiter != "b@L1" {
		t.Errorf("waiters %q %q, want each holder's place in the lock it waits for", st[0].Waiter, st[1].Waiter)
	}
	if st[0].Youngest || !st[1].Youngest {
		t.Errorf("youngest hold marked %v %v, want L2's (acquired last)", st[0].Youngest, st[1].Youngest)
	}
}

func TestDeadlocksThreeCycleAcrossExtraWaiters(t *testing.T) {
	const outsider = "dddddddd-0000-4000-8000-000000000004:d" // waits, holds nothing
	locks := []LockInfo{
		graphLock("x", actorA, 0, outsider, actorC),
		graphLock("y", actorB, 0, actorA),
		graphLock("z", actorC, 0, actorB, outsider),
	}
	got := Deadlocks(locks)
	if len(got) != 1 || cycleString(got[0]) != "x(a)->y y(b)->z z(c)->x" {
		t.Fatalf("deadlocks %+v, want the one cycle x(a)->y y(b)->z z(c)->x", got)
	}
	for i, s := range got[0].Cycle {
		if next := got[0].Cycle[(i+1)%3].Lock; s.WaitsFor != next {
			t.Errorf("step %d waits for %s, the next step's lock is %s", i, s.WaitsFor, next)
		}
	}
	if !got[0].Cycle[0].Youngest {
		t.Error("no hold times recorded: the first step should be suggested")
	}
}

// Chains, shared waits and re-entry queues are no cycles.
func TestDeadlocksNoFalseCycle(t *testing.T) {
	cases := map[string][]LockInfo{
		"chain": {graphLock("L1", actorA, 0), graphLock("L2", actorB, 0, actorA), graphLock("L3", actorC, 0, actorB)},
		"both wait for one holder": {graphLock("L1", actorA, 0, actorB, actorC), graphLock("L2", actorB, 0),
			graphLock("L3", actorC, 0)},
		"waits for its own lock": {graphLock("L1", actorA, 0, actorA)},
		// B waits for L1, but what A waits for is held by C, who waits for nobody.
		"diamond": {graphLock("L1", actorA, 0, actorB), graphLock("L2", actorB, 0), graphLock("L3", actorC, 0, actorA, actorB)},
		"token waiters": {{Name: "t", Kind: KindTokenLock, Holders: []Holder{{ID: "tok1"}},
			Waiters: []Waiter{{ID: "w", Owner: "tok2"}}}},
	}
	for name, locks := range cases {
		if got := Deadlocks(locks); len(got) != 0 {
			t.Errorf("%s: found %+v, want no deadlock", name, got)
		}
	}
}

// A read-write lock's writer is the same actor as its holder field without
// ":write"; read holders each give an edge.
func TestDeadlocksReadWriteHolders(t *testing.T) {
	rw := LockInfo{Name: "rw", Kind: KindRWLock, Mode: wire.RWModeWrite,
		Holders: []Holder{{ID: actorA + wire.RWWriteSuffix, Count: 1, Mode: wire.RWModeWrite}},
		Waiters: []Waiter{{ID: "b@rw", Owner: actorB}}}
	got := Deadlocks([]LockInfo{rw, graphLock("m", actorB, 0, actorA)})
	if len(got) != 1 || got[0].Cycle[1].Holder != actorA+wire.RWWriteSuffix {
		t.Fatalf("deadlocks %+v, want m(b)->rw rw(a:write)->m", got)
	}
	readers := LockInfo{Name: "r", Kind: KindRWLock, Mode: wire.RWModeRead,
		Holders: []Holder{{ID: actorB, Mode: wire.RWModeRead}, {ID: actorC, Mode: wire.RWModeRead}},
		Waiters: []Waiter{{ID: "a@r", Owner: actorA}}}
	got = Deadlocks([]LockInfo{readers, graphLock("n", actorA, 0, actorC)})
	if len(got) != 1 || cycleString(got[0]) != "n(a)->r r(c)->n" {
		t.Fatalf("deadlocks %+v, want the cycle through reader c only", got)
	}
}

// Two cycles that share a lock are both reported, once each.
func TestDeadlocksTwoCyclesShareALock(t *testing.T) {
	locks := []LockInfo{
		graphLock("L1", actorA, 0, actorB, actorC),
		graphLock("L2", actorB, 0, actorA),
		graphLock("L3", actorC, 0),
	}
	locks[2].Waiters = []Waiter{{ID: "a@L3", Owner: actorA}}
	got := Deadlocks(locks)
	var s []string
	for _, d := range got {
		s = append(s, cycleString(d))
	}
	if want := "L1(a)->L2 L2(b)->L1|L1(a)->L3 L3(c)->L1"; strings.Join(s, "|") != want {
		t.Errorf("cycles %q, want %q", strings.Join(s, "|"), want)
	}
}
