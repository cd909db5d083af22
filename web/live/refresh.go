package live

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Read-your-writes. Lists and pages are served from the sampler's
// snapshot, so a change made through the console must be in it before the
// action answers: Refresh reads the changed objects at once and publishes
// a snapshot patched with them. A tick that started before that read may
// have read the old state; publish lays the patch over its snapshot too,
// and a tick that starts after it has read the new state and drops it.

// refreshTimeout bounds the extra read; a change never fails for it.
const refreshTimeout = 2 * time.Second

// patch is the state of some objects read after a change.
type patch struct {
	read     time.Time // when the read started
	locks    []string
	limiters []string
	smp      *inspect.Sample
}

// Holds is what client id holds and waits for in the latest snapshot.
func (sm *Sampler) Holds(id string) []inspect.Hold {
	sn := sm.Latest()
	if sn == nil {
		return nil
	}
	return inspect.ClientHolds(sn.Locks)[id]
}

// Refresh reads locks and limiters now and publishes a snapshot with
// their new state (gone when the read no longer finds them). They are read
// on the next tick too, so the walk keeps track of them.
func (sm *Sampler) Refresh(ctx context.Context, locks, limiters []string) {
	sm.touch.add(locks...)
	sm.touch.add(limiters...)
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	p := patch{read: time.Now(), locks: locks, limiters: limiters}
	smp, err := sm.insp.Sample(ctx, locks, limiters)
	if err != nil {
		sm.log.Warn("reading changed objects", "locks", locks, "limiters", limiters, "err", err)
		return
	}
	p.smp = smp
	sm.pubMu.Lock()
	defer sm.pubMu.Unlock()
	sm.patches = append(sm.patches, p)
	if cur := sm.snap.Load(); cur != nil && cur.RedisUp {
		sm.gone.note(cur, p.missing(), p.read)
		next := p.apply(cur)
		sm.ended.note(cur.Deadlocks, next.Deadlocks, p.read)
		sm.snap.Store(next)
	}
}

// patched lays the patches read after the tick that took sn started over
// sn, and forgets the older ones. Called with pubMu held.
func (sm *Sampler) patched(sn *Snapshot) *Snapshot {
	sm.patches = slices.DeleteFunc(sm.patches, func(p patch) bool { return p.read.Before(sn.Taken) })
	for _, p := range sm.patches {
		sn = p.apply(sn)
	}
	return sn
}

// apply returns a copy of sn with p's objects as p read them.
func (p patch) apply(sn *Snapshot) *Snapshot {
	out := *sn
	out.memo = &Memo{}
	out.Stats = maps.Clone(sn.Stats)
	out.Locks = replaced(sn.Locks, p.locks, p.smp.Locks, p.smp.Unreadable, func(l *inspect.LockInfo) string { return l.Name })
	out.Limiters = replaced(sn.Limiters, p.limiters, p.smp.Limiters, p.smp.Unreadable, func(l *inspect.LimiterInfo) string { return l.Name })
	out.Deadlocks = deadlocksOf(out.Locks, sn.Deadlocks, p.read)
	for _, names := range [][]string{p.locks, p.limiters} {
		for _, n := range names {
			if st, ok := p.smp.Stats[n]; ok {
				out.Stats[n] = st
			}
		}
	}
	return &out
}

// missing are the names p asked for that its read did not find (and
// could read): they are gone.
func (p patch) missing() []string {
	found := make(map[string]bool, len(p.smp.Locks)+len(p.smp.Limiters))
	for _, l := range p.smp.Locks {
		found[l.Name] = true
	}
	for _, l := range p.smp.Limiters {
		found[l.Name] = true
	}
	var out []string
	for _, names := range [][]string{p.locks, p.limiters} {
		for _, n := range names {
			if _, unread := p.smp.Unreadable[n]; !unread && !found[n] {
				out = append(out, n)
			}
		}
	}
	return out
}

// replaced is items with the named ones replaced by their new state from
// read, or removed when read does not have them (and they were readable).
func replaced[T any](items []T, names []string, read []T, unread map[string]inspect.Unread, name func(*T) string) []T {
	if len(names) == 0 {
		return items
	}
	fresh := make(map[string]T, len(read))
	for i := range read {
		fresh[name(&read[i])] = read[i]
	}
	asked := make(map[string]bool, len(names))
	for _, n := range names {
		if _, skip := unread[n]; !skip {
			asked[n] = true
		}
	}
	out := make([]T, 0, len(items)+len(fresh))
	for i := range items {
		n := name(&items[i])
		if !asked[n] {
			out = append(out, items[i])
			continue
		}
		if v, ok := fresh[n]; ok {
			out = append(out, v)
			delete(fresh, n)
		}
	}
	for _, n := range names { // new to the snapshot: in the order asked
		if v, ok := fresh[n]; ok {
			out = append(out, v)
		}
	}
	return out
}
