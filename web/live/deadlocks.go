package live

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Deadlocks are found once per published snapshot (and per patch after a
// console change, so a broken cycle is gone from the very next page): the
// wait-for graph of the snapshot's locks, merged over every master, so a
// cycle may span masters (inspect.Deadlocks).

// SeenDeadlock is a cycle and when the console first saw it.
type SeenDeadlock struct {
	inspect.Deadlock
	Since time.Time
}

// deadlocksOf finds sn's cycles, each keeping its Since from prev (the
// snapshot before) when prev had it, else starting at sn.Taken.
func deadlocksOf(locks []inspect.LockInfo, prev []SeenDeadlock, now time.Time) []SeenDeadlock {
	found := inspect.Deadlocks(locks)
	if len(found) == 0 {
		return nil
	}
	since := make(map[string]time.Time, len(prev))
	for _, d := range prev {
		since[d.Key()] = d.Since
	}
	out := make([]SeenDeadlock, len(found))
	for i, d := range found {
		s, ok := since[d.Key()]
		if !ok {
			s = now
		}
		out[i] = SeenDeadlock{Deadlock: d, Since: s}
	}
	return out
}

// DeadlocksOf returns the cycles lock name is part of.
func (sn *Snapshot) DeadlocksOf(name string) []SeenDeadlock {
	if sn == nil {
		return nil
	}
	var out []SeenDeadlock
	for _, d := range sn.Deadlocks {
		if d.Involves(name) {
			out = append(out, d)
		}
	}
	return out
}

// deadlocks is sn's cycles; none for a nil snapshot.
func (sn *Snapshot) deadlocks() []SeenDeadlock {
	if sn == nil {
		return nil
	}
	return sn.Deadlocks
}
