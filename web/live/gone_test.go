package live

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
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
