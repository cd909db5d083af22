package deadlock

import "testing"

const (
	a = "0badc0de-0000-4000-8000-00000000000a"
	b = "0badc0de-0000-4000-8000-00000000000b"
	c = "0badc0de-0000-4000-8000-00000000000c"
)

// A ring of three comes back once, rotated to its smallest lock and in
// wait order (L1's holder waits for L3), the most recent hold marked to
// break first.
func TestFindRotatesAndMarksYoungest(t *testing.T) {
	edges := map[string][]Edge{
		a + ":1": {{Lock: "L3", Holder: c + ":1", Waiter: "w-a", AcquiredMS: 30}},
		b + ":1": {{Lock: "L1", Holder: a + ":1", Waiter: "w-b", AcquiredMS: 10}},
		c + ":1": {{Lock: "L2", Holder: b + ":1:write", Waiter: "w-c", AcquiredMS: 20}},
	}
	got := Find(edges)
	if len(got) != 1 || len(got[0].Cycle) != 3 {
		t.Fatalf("Find = %+v, want one cycle of three steps", got)
	}
	want := []Step{
		{Lock: "L1", Holder: a + ":1", WaitsFor: "L3", Waiter: "w-a", AcquiredMS: 10},
		{Lock: "L3", Holder: c + ":1", WaitsFor: "L2", Waiter: "w-c", AcquiredMS: 30, Youngest: true},
		{Lock: "L2", Holder: b + ":1:write", WaitsFor: "L1", Waiter: "w-b", AcquiredMS: 20},
	}
	for i, s := range got[0].Cycle {
		if s != want[i] {
			t.Errorf("step %d = %+v, want %+v", i, s, want[i])
		}
	}
	if !got[0].Involves("L2") || got[0].Involves("L4") {
		t.Error("Involves disagrees with the cycle's locks")
	}
}

// A chain that does not close is no deadlock, and a token is no actor.
func TestFindChainAndTokens(t *testing.T) {
	edges := map[string][]Edge{
		a + ":1": {{Lock: "L2", Holder: b + ":1", Waiter: "w-a"}},
		b + ":1": {{Lock: "L3", Holder: "a-token", Waiter: "w-b"}},
	}
	if got := Find(edges); len(got) != 0 {
		t.Fatalf("Find = %+v, want none", got)
	}
	if Actor("a-token") != "" || Actor(b+":1:write") != b+":1" {
		t.Fatal("Actor misreads holder fields")
	}
}
