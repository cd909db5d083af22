package present

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Lock is a lock as the API says it: kind-specific fields appear only on
// the kinds that have them (a fencing token of 0 on a reentrant lock
// would read as a real token). web adds its waits ("wait",
// "wait_windows") beside it.
type Lock struct {
	Name    string           `json:"name"`
	Kind    inspect.Kind     `json:"kind"`
	Holders []inspect.Holder `json:"holders"`
	PTTLMS  int64            `json:"pttl_ms"`
	// Channel is the Redisson-style channel a release is announced on; ""
	// for token locks, whose releases wake only lockwarden's own waiters
	// (TokenLockChannel in store/internal/wire) and are not in the event stream.
	Channel string `json:"channel"`
	// Mode is a read-write lock's "read" or "write".
	Mode string `json:"mode,omitempty"`
	// Waiters are the lock's queue (a fair lock's, store's hand-off
	// queue), always a list in GET of one lock, left out of list rows
	// without waiters; WaitersTotal counts them all. Subscribers counts a
	// held Redisson lock's waiters when they can only be counted (the
	// clients subscribed to its unlock channel), when counted.
	Waiters      []inspect.Waiter `json:"waiters,omitempty"`
	WaitersTotal int64            `json:"waiters_total"`
	Subscribers  *int64           `json:"subscribers,omitempty"`
	// LongestWaitMS is how long the longest current waiter has waited (0
	// when nobody waits, or none says since when: a Redisson fair queue):
	// "wait" counts only the waits that ended.
	LongestWaitMS int64 `json:"longest_wait_ms"`
	// FencingToken is a fenced lock's current token.
	FencingToken *int64 `json:"fencing_token,omitempty"`
	// DeadlineMS is a deadline lock's deadline (epoch ms).
	DeadlineMS *int64 `json:"deadline_ms,omitempty"`
	// Recognised says what made the console take another library's key
	// for this kind (a framework convention); absent for lockwarden's and
	// Redisson's own layouts.
	Recognised string `json:"recognised,omitempty"`
	// ForceUnlock is, per holder, what a force-unlock would do (GET of one
	// lock only).
	ForceUnlock map[string]inspect.ForceUnlockPlan `json:"force_unlock,omitempty"`
	// Stale: the lock is shown as last read, its node not answering.
	Stale *Stale `json:"stale,omitempty"`
	// Acked: every holder's grant was confirmed by replicas (false when
	// one holder's client does not wait for them); absent when no holder's
	// client says. Per holder in holders[].client.acked.
	Acked *bool `json:"acked,omitempty"`
}

// holdersAcked is Lock.Acked.
func holdersAcked(hs []inspect.Holder) *bool {
	var out *bool
	for _, h := range hs {
		if h.Client == nil || h.Client.Acked == nil {
			continue
		}
		v := *h.Client.Acked && (out == nil || *out)
		out = &v
	}
	return out
}

// LockOf is l as a list row says it, its longest wait as of now.
func LockOf(l inspect.LockInfo, now time.Time) Lock {
	out := Lock{Name: l.Name, Kind: l.Kind, Holders: HoldersOf(l.Holders), PTTLMS: LeaseMS(l.PTTL),
		Channel: l.Channel, Mode: l.Mode, Stale: StaleOf(l.Stale), Acked: holdersAcked(l.Holders),
		Recognised: l.Recognised}
	out.Waiters, out.WaitersTotal, out.Subscribers = l.Waiters, l.WaitersTotal, l.Subscribers
	out.LongestWaitMS = LongestWaitMS(&l, now.UnixMilli())
	if l.Kind == inspect.KindFairLock && out.Waiters == nil {
		out.Waiters = []inspect.Waiter{}
	}
	if l.Kind == inspect.KindFencedLock {
		out.FencingToken = &l.FencingToken
	}
	if l.Kind == inspect.KindDeadlineLock {
		ms := l.Deadline.UnixMilli()
		out.DeadlineMS = &ms
	}
	return out
}

// LockDetailOf is LockOf with every waiter and the force-unlock plans:
// GET of one lock.
func LockDetailOf(l inspect.LockInfo, now time.Time) Lock {
	out := LockOf(l, now)
	if out.Waiters == nil {
		out.Waiters = []inspect.Waiter{}
	}
	out.ForceUnlock = make(map[string]inspect.ForceUnlockPlan, len(l.Holders))
	for _, h := range l.Holders {
		out.ForceUnlock[h.ID] = l.ForceUnlockPlan(h.ID)
	}
	return out
}
