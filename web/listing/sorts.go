package listing

import (
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
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
	// SortContention orders locks by their contended acquisitions over
	// the last 10 s, then by the p99 of those waits.
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
	ks := order(sn, "locks", sn.Locks, q, lockName, lockKind, lockKey(sn, q.Sort))
	return pageOf(sn.Locks, ks, q)
}

// Limiters is the page of sn's limiters q asks for.
func Limiters(sn *live.Snapshot, q Query) Page[inspect.LimiterInfo] {
	ks := order(sn, "limiters", sn.Limiters, q, limiterName, limiterKind, limiterKey(sn, q.Sort))
	return pageOf(sn.Limiters, ks, q)
}

// lockKey is a lock's place in the order sort asks for.
func lockKey(sn *live.Snapshot, sort string) func(*inspect.LockInfo) Key {
	// Redis's clock when the leases were read, so deadlines computed from
	// different ticks agree to the millisecond.
	taken := sn.SampledAt.UnixMilli()
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
			// Most contended first, as the wall orders it.
			k.Num = -contention(sn, l.Name)
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
		key = func(l *inspect.LockInfo) Key { return Key{Num: -contention(sn, l.Name), Name: l.Name} }
	}
	return order(sn, "wall-locks", sn.Locks, Query{Sort: sort}, lockName, lockKind, key)
}

// contention is a lock's place in the contention order: its contended
// acquisitions over the last 10 s, then the p99 of those waits.
func contention(sn *live.Snapshot, name string) float64 {
	w := sn.Waits(name).TenSeconds
	// p99 is at most a day's worth of ms in practice; the count dominates.
	return float64(w.Contended) + float64(min(w.P99MS, 1e8))/1e9
}

func lockName(l *inspect.LockInfo) string             { return l.Name }
func lockKind(l *inspect.LockInfo) inspect.Kind       { return l.Kind }
func limiterName(l *inspect.LimiterInfo) string       { return l.Name }
func limiterKind(l *inspect.LimiterInfo) inspect.Kind { return l.Kind }
