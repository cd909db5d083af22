package inspect

import (
	"slices"
	"strings"

	"github.com/lockwarden/lockwarden/store/inspect/deadlock"
)

// Deadlocks are found by package deadlock over the wait-for graph built
// here from a snapshot's locks; these names keep its cycles reachable
// beside the model.
type (
	Deadlock     = deadlock.Cycle
	DeadlockStep = deadlock.Step
)

// waitGraph builds the edges of locks' wait-for graph, by waiting actor.
func waitGraph(locks []LockInfo) map[string][]deadlock.Edge {
	holds := map[string]bool{}
	for _, l := range locks {
		for _, h := range l.Holders {
			if a := deadlock.Actor(h.ID); a != "" {
				holds[a] = true
			}
		}
	}
	edges := map[string][]deadlock.Edge{}
	for _, l := range locks {
		for _, w := range l.Waiters {
			a := deadlock.Actor(w.Owner)
			if a == "" || !holds[a] {
				continue
			}
			for _, h := range l.Holders {
				if b := deadlock.Actor(h.ID); b != "" && b != a {
					edges[a] = append(edges[a], deadlock.Edge{Lock: l.Name, Holder: h.ID, Waiter: w.ID, AcquiredMS: h.AcquiredMS})
				}
			}
		}
	}
	for _, es := range edges {
		slices.SortFunc(es, func(x, y deadlock.Edge) int {
			return strings.Compare(x.Lock+"\x00"+x.Holder, y.Lock+"\x00"+y.Holder)
		})
	}
	return edges
}

// Deadlocks finds the cycles of the wait-for graph of locks (a snapshot's,
// merged over every master), as deadlock.Find says.
func Deadlocks(locks []LockInfo) []Deadlock { return deadlock.Find(waitGraph(locks)) }

// AnnotateDeadlock is deadlock.Annotate.
func AnnotateDeadlock(reg *Registry, d *Deadlock) { deadlock.Annotate(reg, d) }
