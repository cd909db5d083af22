package live

import (
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// What the console remembers of objects it stopped listing: a lock whose
// key went (released, expired, force-unlocked) or a limiter whose key went
// (a counter's window ended). The sampler already drops such names from
// the set it reads (advance, Refresh); before it does, it notes the last
// state it published, so "why is this free?" has an answer for an hour
// without any read of Redis. Memory is bounded by count and age.

// GoneFor is how long a gone object is remembered.
const GoneFor = time.Hour

// maxGone bounds the memory: past it the oldest entries go first. An entry
// is a few hundred bytes.
const maxGone = 10000

// Gone is an object the console listed until At.
type Gone struct {
	Name string
	Kind inspect.Kind
	// Lock: it was a lock (else a limiter).
	Lock bool
	// Holders are a lock's holders as last published, with who they were
	// (inspect.AnnotateHolder as of LastSeen).
	Holders []inspect.Holder
	// WaitersTotal is how many waited for it then.
	WaitersTotal int64
	// LastSeen is the Redis time of the last snapshot that listed it; At
	// is when the console found it gone (local time of the tick or change).
	LastSeen time.Time
	At       time.Time
}

// goneMemory is the sampler's memory of gone objects; the run goroutine
// and Refresh write it, requests read it.
type goneMemory struct {
	mu     sync.RWMutex
	byName map[string]Gone
	order  []goneRef // insertion order, for eviction
}

type goneRef struct {
	name string
	at   time.Time
}

// note remembers the named objects of prev (the snapshot before they went)
// as gone at.
func (g *goneMemory) note(prev *Snapshot, names []string, at time.Time) {
	if prev == nil || len(names) == 0 {
		return
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	var found []Gone
	for i := range prev.Locks {
		if want[prev.Locks[i].Name] {
			found = append(found, goneLock(prev, &prev.Locks[i], at))
		}
	}
	for _, l := range prev.Limiters {
		if want[l.Name] {
			found = append(found, Gone{Name: l.Name, Kind: l.Kind, LastSeen: prev.SampledAt, At: at})
		}
	}
	if len(found) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byName == nil {
		g.byName = make(map[string]Gone)
	}
	for _, gn := range found {
		g.byName[gn.Name] = gn
		g.order = append(g.order, goneRef{gn.Name, at})
	}
	g.evict(at)
}

// goneLock is what sn says of lock l, found gone at at.
func goneLock(sn *Snapshot, l *inspect.LockInfo, at time.Time) Gone {
	gn := Gone{Name: l.Name, Kind: l.Kind, Lock: true, WaitersTotal: l.WaitersTotal, LastSeen: sn.SampledAt, At: at}
	for _, h := range l.Holders {
		inspect.AnnotateHolder(sn.Registry, &h, sn.HolderSeen[HolderKey(l.Name, h.ID)], sn.SampledAt)
		gn.Holders = append(gn.Holders, h)
	}
	return gn
}

// GoneFromSnapshot is what sn, which still lists lock name, says of it
// once a request found it gone at at, before the next tick writes the
// sampler's own record (Sampler.Gone).
func GoneFromSnapshot(sn *Snapshot, name string, at time.Time) (Gone, bool) {
	if sn == nil {
		return Gone{}, false
	}
	for i := range sn.Locks {
		if sn.Locks[i].Name == name {
			return goneLock(sn, &sn.Locks[i], at), true
		}
	}
	return Gone{}, false
}

// evict drops entries past maxGone or older than GoneFor, oldest first.
// Called with mu held.
func (g *goneMemory) evict(now time.Time) {
	drop := 0
	for drop < len(g.order) {
		r := g.order[drop]
		if len(g.order)-drop <= maxGone && now.Sub(r.at) < GoneFor {
			break
		}
		if cur, ok := g.byName[r.name]; ok && cur.At.Equal(r.at) {
			delete(g.byName, r.name)
		}
		drop++
	}
	if drop > 0 {
		g.order = append(g.order[:0:0], g.order[drop:]...)
	}
}

// lookup is name's entry when it went within GoneFor of now.
func (g *goneMemory) lookup(name string, now time.Time) (Gone, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	gn, ok := g.byName[name]
	if !ok || now.Sub(gn.At) >= GoneFor {
		return Gone{}, false
	}
	return gn, true
}

// Gone is what the console remembers of name, an object it listed within
// the last GoneFor and no longer lists; false when it remembers nothing
// (never seen, seen too long ago, or listed now: ask the snapshot first).
func (sm *Sampler) Gone(name string) (Gone, bool) {
	return sm.gone.lookup(name, time.Now())
}
