package live

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
)

// What the console last published of a lock that went is remembered with
// its holder for an hour; past maxGone entries the oldest go first.
func TestGoneMemory(t *testing.T) {
	t0 := time.Now()
	prev := &Snapshot{SampledAt: t0, Locks: []inspect.LockInfo{{Name: "a", Kind: inspect.KindReentrant,
		Holders: []inspect.Holder{{ID: "tok"}}, WaitersTotal: 2}}, Limiters: []inspect.LimiterInfo{{Name: "c", Kind: inspect.KindCounter}}}
	var g goneMemory
	g.note(prev, []string{"a", "c", "never-listed"}, t0)
	a, ok := g.lookup("a", t0.Add(time.Minute))
	if !ok || !a.Lock || len(a.Holders) != 1 || a.Holders[0].Who != "tok" || a.WaitersTotal != 2 {
		t.Errorf("a = %+v, %v", a, ok)
	}
	if c, ok := g.lookup("c", t0); !ok || c.Lock {
		t.Errorf("c = %+v, %v", c, ok)
	}
	if _, ok := g.lookup("never-listed", t0); ok {
		t.Error("a name the snapshot did not list is not remembered")
	}
	if _, ok := g.lookup("a", t0.Add(GoneFor)); ok {
		t.Error("remembered past GoneFor")
	}
	for i := range maxGone {
		n := fmt.Sprint("l", i)
		g.note(&Snapshot{Locks: []inspect.LockInfo{{Name: n}}}, []string{n}, t0.Add(time.Second))
	}
	if _, ok := g.lookup("a", t0.Add(2*time.Second)); ok || len(g.byName) != maxGone {
		t.Errorf("%d entries, a kept %v: want the oldest gone at the cap", len(g.byName), ok)
	}
}

// A discovery pass that no longer finds a lock the last snapshot listed
// (released between two ticks) remembers it as gone, as a tick that misses
// it does. Before, the pass replaced the names silently: the lock's answer
// said "free since 0001-01-01" and named no holder.
func TestPassDropsAreRememberedGone(t *testing.T) {
	t0 := time.Now()
	sm := &Sampler{firstSeen: map[string]time.Time{}, windows: newWindows(windowTicks),
		locks: []string{"held", "released"}}
	sm.snap.Store(&Snapshot{SampledAt: t0, Locks: []inspect.LockInfo{
		{Name: "held", Kind: inspect.KindReentrant, Holders: []inspect.Holder{{ID: "a"}}},
		{Name: "released", Kind: inspect.KindReentrant, Holders: []inspect.Holder{{ID: "b"}}},
	}})
	sm.adopt(&walk.Discovered{Locks: []inspect.LockInfo{{Name: "held"}}}, t0.Add(time.Second))
	g, ok := sm.Gone("released")
	if !ok || !g.Lock || len(g.Holders) != 1 || g.Holders[0].ID != "b" || !g.At.Equal(t0.Add(time.Second)) {
		t.Errorf("released: %+v, %v; want remembered gone with its holder b, found gone at the pass", g, ok)
	}
	if _, ok := sm.Gone("held"); ok {
		t.Error("a lock the pass still finds is not gone")
	}
	// A pass that found more locks than it lists leaves some out: they
	// are not gone.
	sm.locks = []string{"held", "past-the-cap"}
	sm.snap.Store(&Snapshot{SampledAt: t0, Locks: []inspect.LockInfo{{Name: "held"}, {Name: "past-the-cap"}}})
	sm.adopt(&walk.Discovered{Locks: []inspect.LockInfo{{Name: "held"}}, LocksTruncated: true}, t0.Add(2*time.Second))
	if _, ok := sm.Gone("past-the-cap"); ok {
		t.Error("a lock left out of a truncated pass is remembered gone")
	}
}
