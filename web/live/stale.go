package live

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// What the console shows while a Redis Cluster master does not answer: the
// objects on it keep their last numbers, marked stale, while the other
// masters' objects stay live.

// keepStale puts back, as last read and marked stale, the objects whose
// node did not answer this tick, with their last numbers: a master down
// must not make its objects vanish, nor freeze the others'. An object the
// console never read before has nothing to show and stays out until its
// node answers.
func (sm *Sampler) keepStale(smp *inspect.Sample) {
	prev := sm.Latest()
	if len(smp.Unreadable) == 0 || prev == nil {
		return
	}
	if smp.Stats == nil {
		smp.Stats = map[string]inspect.Summary{}
	}
	mark := func(name string, was *inspect.StaleRead) *inspect.StaleRead {
		u := smp.Unreadable[name]
		st := &inspect.StaleRead{Node: u.Node, LastRead: prev.SampledAt}
		if u.Err != nil {
			st.Reason = u.Err.Error()
			st.ClusterDown = inspect.IsClusterDown(st.Reason)
		}
		if was != nil { // stale already: the read it shows is older
			st.LastRead = was.LastRead
		}
		return st
	}
	for _, l := range prev.Locks {
		if _, ok := smp.Unreadable[l.Name]; ok {
			l.Stale = mark(l.Name, l.Stale)
			smp.Locks = append(smp.Locks, l)
			smp.Stats[l.Name] = prev.Stats[l.Name]
		}
	}
	for _, l := range prev.Limiters {
		if _, ok := smp.Unreadable[l.Name]; ok {
			l.Stale = mark(l.Name, l.Stale)
			smp.Limiters = append(smp.Limiters, l)
			smp.Stats[l.Name] = prev.Stats[l.Name]
		}
	}
}

// passFailed notes how a full pass after the first ended. One that failed
// (a Cluster master down: every master must answer its SCAN) must not stop
// the tick, or the masters that answer would freeze with the dead one: the
// sample goes on with the names already known and the pass is tried again
// a period later.
func (sm *Sampler) passFailed(start time.Time, err error) {
	if err == nil {
		if sm.passFailing {
			sm.log.Info("discovery full pass succeeded again")
		}
		sm.passFailing = false
		return
	}
	sm.ticks.redisErrors.Add(1)
	if !sm.passFailing {
		sm.log.Warn("discovery full pass failed; sampling the known objects", "err", err)
	}
	sm.passFailing = true
	sm.passRetry = start.Add(sm.fullPassEvery())
}
