package store

import (
	"errors"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// A read-write lock's watchdog and a spin lock's renewal timer run while the
// handle holds a level and stop once it holds none: on the last Unlock, or
// when a renewal finds the hold gone (a console force-unlock).
// Neither is visible in Redis (a renewal of a missing field changes
// nothing), so the tests read the handles' own state.

func TestRWWatchdogStopsWhenHoldIsGone(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "rw"
	rw := c.NewRWLock(name, &LockOptions{Lease: 600 * time.Millisecond})
	r := rw.Reader()
	if err := r.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if !rw.renewing() {
		t.Fatal("watchdog not running while a read level is held")
	}
	if err := rdb.Del(ctx, name).Err(); err != nil { // the only holder: the console deletes the lock
		t.Fatal(err)
	}
	redistest.Eventually(t, "the watchdog notices the lost hold", func() bool { return !rw.renewing() })
	if err := r.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock after the field went = %v, want ErrNotHeld", err)
	}

	w := rw.Writer()
	if err := w.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if !rw.renewing() {
		t.Fatal("watchdog not running while the write side is held")
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if rw.renewing() {
		t.Fatal("watchdog still running after the last level was released")
	}
}

func TestSpinRenewalStopsWhenHoldIsGone(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "spin"
	s := c.NewSpinLock(name, &LockOptions{Lease: 600 * time.Millisecond})
	if err := s.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if !s.renewing() {
		t.Fatal("renewal not running while held")
	}
	if err := s.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if s.renewing() {
		t.Fatal("renewal still running after the last level was released")
	}

	if err := s.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HDel(ctx, name, s.HolderID()).Err(); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the renewal notices the lost hold", func() bool { return !s.renewing() })
}
