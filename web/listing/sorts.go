package listing

import (
	"strings"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
	"github.com/lockwarden/lockwarden/web/present"
)

// Sort columns of the lock and limiter lists. A list's default is by name.
const (
	SortName     = "name"
	SortLease    = "lease"
	SortAge      = "age"
	SortHolder   = "holder"
	SortWaiters  = "waiters"
	SortRate     = "rate"
	SortAcquired = "acquired"
	SortRejected = "rejected"
	SortRatio    = "ratio"
	// SortContention orders locks stuck first: those in a deadlock, then
	// those with a current waiter, the longest waiting first; then the
	// rest by their contended acquisitions over the last 10 s and the p99
	// of those waits.
	SortContention = "contention"
)

// The sorts and kinds each list offers.
var (
	LockSorts    = []string{SortName, SortLease, SortAge, SortHolder, SortContention, SortWaiters}
	LimiterSorts = []string{SortName, SortRate, SortAcquired, SortRejected, SortRatio}
	LockKinds    = inspect.LockKinds()
	LimiterKinds = inspect.LimiterKinds()
)

// noExpiryKey sorts a lock without a lease after every lock with one.
const noExpiryKey = 1 << 60

// Locks is the page of sn's locks q asks for.
func Locks(sn *live.Snapshot, q Query) Page[inspect.LockInfo] {
	ks := order(sn, "locks", sn.Locks, q, lockName, lockKind, lockKey(sn, q.Sort), lockSearch(sn.Registry))
	return pageOf(sn.Locks, ks, q)
}

// Limiters is the page of sn's limiters q asks for.
func Limiters(sn *live.Snapshot, q Query) Page[inspect.LimiterInfo] {
	ks := order(sn, "limiters", sn.Limiters, q, limiterName, limiterKind, limiterKey(sn, q.Sort), limiterSearch)
	return pageOf(sn.Limiters, ks, q)
}

// lockKey is a lock's place in the order sort asks for.
func lockKey(sn *live.Snapshot, sort string) func(*inspect.LockInfo) Key {
	// Redis's clock when the leases were read, so deadlines computed from
	// different ticks agree to the millisecond.
	taken := sn.SampledAt.UnixMilli()
	stuckFirst := contentionKey(sn)
	return func(l *inspect.LockInfo) Key {
		k := Key{Name: l.Name}
		switch sort {
		case SortLease:
			// The deadline, not the lease left: it stays put between ticks.
			if l.PTTL < 0 {
				k.Num = noExpiryKey
			} else {
				k.Num = float64(taken + l.PTTL.Milliseconds())
			}
		case SortAge:
			// Youngest first: the latest first-seen instant has the least age.
			k.Num = -noExpiryKey
			if t, ok := sn.FirstSeen[l.Name]; ok {
				k.Num = -float64(t.UnixMilli())
			}
		case SortHolder:
			if len(l.Holders) > 0 {
				k.Str = l.Holders[0].ID
			}
		case SortContention:
			// Stuck first, as the wall orders it.
			k.Num = stuckFirst(l)
		case SortWaiters:
			// Most waiters first, like youngest first for ages.
			k.Num = -float64(l.WaitersTotal)
		}
		return k
	}
}

// limiterKey is a limiter's place in the order sort asks for.
func limiterKey(sn *live.Snapshot, sort string) func(*inspect.LimiterInfo) Key {
	return func(l *inspect.LimiterInfo) Key {
		k := Key{Name: l.Name}
		w := sn.Window(l.Name)
		switch sort {
		case SortRate:
			k.Num = l.PerSecond
		case SortAcquired:
			k.Num = float64(w.Acquired)
		case SortRejected:
			k.Num = float64(w.Rejected)
		case SortRatio:
			if t := w.Acquired + w.Rejected + w.Errors; t > 0 {
				k.Num = float64(w.Rejected) / float64(t)
			}
		}
		return k
	}
}

// WallLocks is sn's locks by name, or the most contended first (ties by
// name, as static/waits.js orders them live): the inverse of contention
// in the order's ascending pass.
func WallLocks(sn *live.Snapshot, sort string) []Keyed {
	key := func(l *inspect.LockInfo) Key { return Key{Name: l.Name} }
	if sort == SortContention {
		stuckFirst := contentionKey(sn)
		key = func(l *inspect.LockInfo) Key { return Key{Num: stuckFirst(l), Name: l.Name} }
	}
	return order(sn, "wall-locks", sn.Locks, Query{Sort: sort}, lockName, lockKind, key, lockSearch(sn.Registry))
}

// Tiers of the contention order: a lock in a deadlock, then one with a
// current waiter, then the rest. Within the first two the key is the
// longest waiter's arrival (epoch ms, about 1.8e12: the oldest first, and
// it stays put between ticks as a cursor needs), within the last the
// negated contention (at most about 1e8): every key is an integer or a
// small fraction well inside float64's exact range.
const (
	tierDeadlocked = -3e15
	tierWaiting    = -2e15
)

// contentionKey is a lock's key in the contention order of sn (see the
// tiers above).
func contentionKey(sn *live.Snapshot) func(*inspect.LockInfo) float64 {
	var deadlocked map[string]bool
	for _, d := range sn.Deadlocks {
		if deadlocked == nil {
			deadlocked = map[string]bool{}
		}
		for _, st := range d.Cycle {
			deadlocked[st.Lock] = true
		}
	}
	return func(l *inspect.LockInfo) float64 {
		since := float64(present.WaitingSince(l))
		switch {
		case deadlocked[l.Name]:
			return tierDeadlocked + since
		case since > 0:
			return tierWaiting + since
		}
		return -contention(sn, l.Name)
	}
}

// contention is a lock's place among the locks nobody waits for now: its
// contended acquisitions over the last 10 s, then the p99 of those waits.
func contention(sn *live.Snapshot, name string) float64 {
	w := sn.Waits(name).TenSeconds
	// p99 is at most a day's worth of ms in practice; the count dominates.
	return float64(w.Contended) + float64(min(w.P99MS, 1e8))/1e9
}

func lockName(l *inspect.LockInfo) string             { return l.Name }
func lockKind(l *inspect.LockInfo) inspect.Kind       { return l.Kind }
func limiterName(l *inspect.LimiterInfo) string       { return l.Name }
func limiterKind(l *inspect.LimiterInfo) inspect.Kind { return l.Kind }

// SearchedFields says what a search looks in, for the words of an empty
// answer.
const SearchedFields = "name, holder, app, host, owner and client id"

// lockSearch says whether a lock matches a lowercased search: its name,
// or a holder's or waiter's id (which holds the client id and the owner),
// or that client's application or host as the registry names them.
func lockSearch(reg *inspect.Registry) func(*inspect.LockInfo, string) bool {
	return func(l *inspect.LockInfo, q string) bool {
		if has(l.Name, q) {
			return true
		}
		for _, h := range l.Holders {
			if idMatches(reg, h.ID, q) {
				return true
			}
		}
		for _, w := range l.Waiters {
			if has(w.ID, q) || idMatches(reg, w.Owner, q) {
				return true
			}
		}
		return false
	}
}

// idMatches: q is part of a holder field or waiter owner, or of its
// registered client's application or host.
func idMatches(reg *inspect.Registry, id, q string) bool {
	if has(id, q) {
		return true
	}
	ci, ok := reg.Lookup(id)
	return ok && (has(ci.App, q) || has(ci.Host, q))
}

func limiterSearch(l *inspect.LimiterInfo, q string) bool { return has(l.Name, q) }

// has: lowercased q is part of s, any case (strings.ToLower returns an
// all-lowercase s as it is, so most names cost no copy).
func has(s, q string) bool { return strings.Contains(strings.ToLower(s), q) }
