package live

import (
	"slices"
	"sync"
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

// EndedDeadlock is a cycle the console saw and then saw no more: broken
// by a force-unlock, or left by a waiter that gave up.
type EndedDeadlock struct {
	inspect.Deadlock
	Since time.Time `json:"since"`
	Ended time.Time `json:"ended"`
}

// Bounds of the memory of ended cycles.
const (
	// EndedDeadlocksKept is how long an ended cycle is remembered.
	EndedDeadlocksKept = 24 * time.Hour
	maxEndedDeadlocks  = 1000
)

// endedDeadlocks remembers the cycles that ended; the sampler writes it
// under pubMu, requests read it.
type endedDeadlocks struct {
	mu   sync.Mutex
	list []EndedDeadlock // oldest first
}

// note records the cycles of prev that next no longer has, ended at.
func (e *endedDeadlocks) note(prev, next []SeenDeadlock, at time.Time) {
	if len(prev) == 0 {
		return
	}
	still := make(map[string]bool, len(next))
	for _, d := range next {
		still[d.Key()] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, d := range prev {
		if !still[d.Key()] {
			e.list = append(e.list, EndedDeadlock{Deadlock: d.Deadlock, Since: d.Since, Ended: at})
		}
	}
	cut := 0
	for cut < len(e.list) && at.Sub(e.list[cut].Ended) > EndedDeadlocksKept {
		cut++
	}
	cut = max(cut, len(e.list)-maxEndedDeadlocks)
	e.list = slices.Clone(e.list[cut:])
}

// EndedDeadlocksOf returns the ended cycles lock name was part of, in the
// last EndedDeadlocksKept, newest first.
func (sm *Sampler) EndedDeadlocksOf(name string) []EndedDeadlock {
	sm.ended.mu.Lock()
	defer sm.ended.mu.Unlock()
	var out []EndedDeadlock
	for i := len(sm.ended.list) - 1; i >= 0; i-- {
		if d := sm.ended.list[i]; d.Involves(name) {
			out = append(out, d)
		}
	}
	return out
}
