package live

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Who holds a lock and since when: the sampler reads the client registry at
// most once a second (registryEvery) and remembers when it first saw each
// holder; pages and the API join both with the locks they show.

// registryEvery bounds the sampler's registry reads.
const registryEvery = time.Second

// askRegistry has the tick's pipeline read the registry when the last
// read is a second old (Walker.ReadClients): identities cost no round trip
// of their own, and the tick stays one pipeline per node.
func (sm *Sampler) askRegistry(now time.Time) {
	if !sm.registryRead.IsZero() && now.Sub(sm.registryRead) < registryEvery {
		return
	}
	sm.registryRead = now
	sm.walker.ReadClients()
}

// takeRegistry keeps the registry the tick read. A tick that did not read
// it, or failed to, keeps the previous one: who a client is does not change.
func (sm *Sampler) takeRegistry(smp *inspect.Sample) {
	if smp.Registry != nil {
		sm.registry = smp.Registry
	}
}

// seeHolders returns the first-sight times of the holders in locks,
// carrying over those already seen; holders gone are forgotten, so a
// holder that returns starts over. The map is new each tick (snapshots
// are never modified after publishing).
func (sm *Sampler) seeHolders(locks []inspect.LockInfo, now time.Time) map[string]time.Time {
	next := make(map[string]time.Time, len(locks))
	for _, l := range locks {
		for _, h := range l.Holders {
			k := HolderKey(l.Name, h.ID)
			if t, ok := sm.holderSeen[k]; ok {
				next[k] = t
			} else {
				next[k] = now
			}
		}
	}
	sm.holderSeen = next
	return next
}
