// Package deadlock finds the cycles of a wait-for graph of locks. An actor
// is a holder field "<client-uuid>:<owner>": store's handles with the same
// Owner on one Client are one holder (they re-enter each other's holds), as
// a thread is in Redisson. A waiter whose
// owner holds another lock gives an edge: owner → the lock it waits for →
// that lock's holder. A cycle of such edges is a deadlock: every actor in
// it waits for the next one, and the watchdogs keep every lease alive, so
// nothing ends it but a force-unlock. The graph is built from one
// snapshot's locks, merged over every master of a Cluster, so a cycle may
// span masters. Waiters whose owner is not a holder field (a token lock's
// token) take part in no edge.
//
// The graph's edges come from package inspect, which builds them from a
// snapshot's locks; this package knows nothing of how Redis keeps them.
package deadlock

import (
	"slices"
	"strings"

	"github.com/lockwarden/lockwarden/store/inspect/clients"
	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Step is one step of a cycle: Holder holds Lock and waits for
// WaitsFor, the next step's Lock.
type Step struct {
	Lock string `json:"lock"`
	// Holder is the lock's holder field as Redis has it (a read-write
	// lock's writer keeps its ":write" suffix), what a holder-checked
	// force-unlock names.
	Holder   string `json:"holder"`
	WaitsFor string `json:"waits_for"`
	// Waiter is Holder's place in WaitsFor's queue (a store wait token or
	// a fair-lock waiter id).
	Waiter string `json:"waiter"`
	// Client and Who are Holder's identity, filled by the console
	// (Annotate) from the client registry.
	Client *clients.HolderClient `json:"client,omitempty"`
	Who    string                `json:"who,omitempty"`
	// AcquiredMS is when Holder took Lock (lockwarden's hold times, epoch
	// ms); 0 when not recorded.
	AcquiredMS int64 `json:"-"`
	// Youngest marks the hold to break first: the most recent acquisition
	// recorded in the cycle (the least work lost), else the first step.
	Youngest bool `json:"youngest"`
}

// Cycle is one cycle of the wait-for graph, rotated to start at its
// smallest lock name.
type Cycle struct {
	Cycle []Step `json:"cycle"`
}

// Key names the cycle: the same locks and holders in the same order give
// the same key from one tick to the next.
func (d Cycle) Key() string {
	var b strings.Builder
	for _, s := range d.Cycle {
		b.WriteString(s.Lock)
		b.WriteByte(0)
		b.WriteString(s.Holder)
		b.WriteByte(0)
	}
	return b.String()
}

// Involves reports whether lock is one of the cycle's.
func (d Cycle) Involves(lock string) bool {
	return slices.ContainsFunc(d.Cycle, func(s Step) bool { return s.Lock == lock })
}

// maxCycles bounds the cycles one search reports: every one of them is
// critical, and a graph tangled enough to have more has them all in view.
const maxCycles = 100

// Edge is one edge of the graph: the actor waiting as Waiter waits for
// Lock, held by Holder (as its holder field reads) since AcquiredMS.
type Edge struct {
	Lock, Holder, Waiter string
	AcquiredMS           int64
}

// Actor is the actor a holder field or waiter owner belongs to: a
// writer's field without its ":write" suffix, "" for ids that are no
// client's.
func Actor(id string) string {
	if !wire.IsHolderField(id) {
		return ""
	}
	return strings.TrimSuffix(id, wire.RWWriteSuffix)
}

// Find finds the cycles of the wait-for graph whose edges, by waiting
// actor, are edges (each actor's sorted by lock, then holder): a
// depth-first search over actors in sorted order reports each cycle it
// closes, once, rotated to its smallest lock, sorted by it; at most
// maxCycles.
func Find(edges map[string][]Edge) []Cycle {
	if len(edges) == 0 {
		return nil
	}
	actors := make([]string, 0, len(edges))
	for a := range edges {
		actors = append(actors, a)
	}
	slices.Sort(actors)
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	seen := map[string]bool{}
	var out []Cycle
	for _, start := range actors {
		if color[start] != white {
			continue
		}
		path := []searchFrame{{actor: start}}
		color[start] = grey
		for len(path) > 0 && len(out) < maxCycles {
			top := &path[len(path)-1]
			es := edges[top.actor]
			if top.next >= len(es) {
				color[top.actor] = black
				path = path[:len(path)-1]
				continue
			}
			e := es[top.next]
			top.next++
			to := Actor(e.Holder)
			switch color[to] {
			case white:
				color[to] = grey
				path = append(path, searchFrame{actor: to})
			case grey:
				d := closeCycle(path, edges, to)
				if k := d.Key(); !seen[k] {
					seen[k] = true
					out = append(out, d)
				}
			}
		}
	}
	slices.SortFunc(out, func(x, y Cycle) int { return strings.Compare(x.Key(), y.Key()) })
	return out
}

// searchFrame is one actor on the search's path, with the index of the
// next of its edges to follow (the one before it is the edge followed).
type searchFrame struct {
	actor string
	next  int
}

// closeCycle turns the search path from actor to (on the path) to its top,
// whose last followed edge leads back to to, into a Cycle.
func closeCycle(path []searchFrame, edges map[string][]Edge, to string) Cycle {
	ring := path[slices.IndexFunc(path, func(f searchFrame) bool { return f.actor == to }):]
	// out[j] is the edge ring[j] followed: ring[j] waits for its Lock, held
	// by ring[j+1] (the top's leads back to ring[0]).
	out := make([]Edge, len(ring))
	for j, f := range ring {
		out[j] = edges[f.actor][f.next-1]
	}
	n := len(out)
	steps := make([]Step, n)
	for j := range out {
		// ring[j+1] holds out[j].Lock and waits for out[j+1].Lock.
		held, waits := out[j], out[(j+1)%n]
		steps[j] = Step{Lock: held.Lock, Holder: held.Holder, WaitsFor: waits.Lock, Waiter: waits.Waiter,
			AcquiredMS: held.AcquiredMS}
	}
	first := 0
	for j := range steps {
		if steps[j].Lock < steps[first].Lock {
			first = j
		}
	}
	steps = append(steps[first:], steps[:first]...)
	youngest := 0
	for j := range steps {
		if steps[j].AcquiredMS > steps[youngest].AcquiredMS {
			youngest = j
		}
	}
	steps[youngest].Youngest = true
	return Cycle{Cycle: steps}
}

// Annotate fills each step's identity from the registry.
func Annotate(reg *clients.Registry, d *Cycle) {
	d.Cycle = slices.Clone(d.Cycle)
	for i := range d.Cycle {
		s := &d.Cycle[i]
		s.Who, s.Client = clients.Describe(reg, s.Holder), clients.Of(reg, s.Holder)
	}
}
