package live

import (
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// On a Cluster a sample's one keyless TIME runs on any master, apart from
// the lock's own reads: the sample that misses a hold can carry a TIME
// read before its lease ran out while the lock's master read it after.
// The lease is judged by the lock's master's clock (Sample.TimeOf), so the
// hold reads as expired and the next holder's grant as a violation. By
// the keyless TIME it read as released before its end: no violation.
func TestLeaseExpiryJudgedByTheLocksOwnMaster(t *testing.T) {
	const name = "orders:import"
	t0 := time.Now()
	held := func(holder string) []inspect.LockInfo {
		return []inspect.LockInfo{{Name: name, Kind: inspect.KindTokenLock, PTTL: time.Minute,
			Holders: []inspect.Holder{{ID: holder}}}}
	}
	var w leaseWatch
	first := held("tok-a")
	first[0].PTTL = 600 * time.Millisecond
	w.observe(&inspect.Sample{At: t0, LockAt: map[string]time.Time{name: t0}, Locks: first}, nil, t0)
	// The miss: the keyless TIME says 550 ms, the lock's master 650 ms.
	w.observe(&inspect.Sample{At: t0.Add(550 * time.Millisecond),
		LockAt: map[string]time.Time{name: t0.Add(650 * time.Millisecond)}}, nil, t0.Add(time.Second))
	for i := range expiryGrace + 1 {
		at := t0.Add(time.Duration(700+100*i) * time.Millisecond)
		w.observe(&inspect.Sample{At: at, LockAt: map[string]time.Time{name: at}, Locks: held("tok-b")}, nil, at)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.list) != 1 || w.list[0].Kind != ViolationExpiredWhileWorking || w.list[0].Holder != "tok-a" || !w.list[0].Probable {
		t.Fatalf("violations %+v: want tok-a's lease run out while tok-b took the lock", w.list)
	}
}
