package main

import (
	"testing"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// The demo's deadlock stays until the console breaks it: the inspector
// finds the cycle between the two services, a force-unlock of the
// suggested hold ends it, and both services' waits then end with the lock.
func TestCmdDemoDeadlockStaysUntilBroken(t *testing.T) {
	rdb := trafficClient(t)
	tr := &traffic{cfg: trafficConfig{Prefix: redistest.Prefix(t)}, log: (&trafficConfig{}).logger(), n: &trafficCounts{}}
	a := store.New(rdb, &store.Options{App: "inventory-svc"})
	b := store.New(rdb, &store.Options{App: "checkout-svc"})
	t.Cleanup(func() { a.Close(); b.Close() })
	done := make(chan struct{})
	go func() { tr.deadlockRound(t.Context(), a, b); close(done) }()

	insp := inspect.New(rdb, nil)
	names := []string{tr.cfg.Prefix + demoStock, tr.cfg.Prefix + demoCart}
	var found []inspect.Deadlock
	redistest.Eventually(t, "the services' deadlock", func() bool {
		var locks []inspect.LockInfo
		for _, n := range names {
			if l, err := insp.GetLock(t.Context(), n); err == nil {
				locks = append(locks, *l)
			}
		}
		found = inspect.Deadlocks(locks)
		return len(found) == 1
	})
	select {
	case <-done:
		t.Fatal("the round ended before anyone broke the deadlock")
	default:
	}
	var step inspect.DeadlockStep
	for _, s := range found[0].Cycle {
		if s.Youngest {
			step = s
		}
	}
	if err := insp.ForceUnlock(t.Context(), step.Lock, step.Holder); err != nil {
		t.Fatal(err)
	}
	<-done
	if n := tr.n.deadlocksBroken.Load(); n != 2 {
		t.Errorf("%d waits ended with the lock, want both", n)
	}
	for _, n := range names {
		if _, err := insp.GetLock(t.Context(), n); err == nil {
			t.Errorf("%s still held after the round", n)
		}
	}
}
