package store_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockwarden/lockwarden/store"
)

// Every lock kind speaks TryLock, Lock and Unlock with the same errors: a
// lock held by someone else is ErrNotObtained (a *store.LockedError saying
// for how long), an unlock by a non-holder ErrNotHeld.
func ExampleLock() {
	ctx, c, p, done := exampleClient()
	defer done()

	mine := c.NewLock(p+"orders", &store.LockOptions{Owner: "worker-1"})
	theirs := c.NewLock(p+"orders", &store.LockOptions{Owner: "worker-2"})
	fmt.Println("take:", mine.TryLock(ctx))
	fmt.Println("re-enter:", mine.TryLock(ctx)) // the same owner re-enters
	fmt.Println("other owner held off:", errors.Is(theirs.TryLock(ctx), store.ErrNotObtained))
	fmt.Println("other owner cannot unlock:", errors.Is(theirs.Unlock(ctx), store.ErrNotHeld))
	fmt.Println("unlock:", mine.Unlock(ctx), mine.Unlock(ctx))
	fmt.Println("now free:", theirs.TryLock(ctx))
	_ = theirs.Unlock(ctx)
	// Output:
	// take: <nil>
	// re-enter: <nil>
	// other owner held off: true
	// other owner cannot unlock: true
	// unlock: <nil> <nil>
	// now free: <nil>
}

// A spin lock is the reentrant lock's layout taken by polling every
// Interval; Lock waits as long as ctx allows.
func ExampleSpinLock() {
	ctx, c, p, done := exampleClient()
	defer done()

	opts := &store.SpinLockOptions{Lease: 3 * time.Second, RetryInterval: 10 * time.Millisecond}
	a, b := c.NewSpinLock(p+"report", opts), c.NewSpinLock(p+"report", opts)
	fmt.Println("a:", a.TryLock(ctx))
	var held *store.LockedError
	fmt.Println("b held off:", errors.As(b.TryLock(ctx), &held))

	got := make(chan error)
	go func() { got <- b.Lock(ctx) }() // spins until a lets go
	fmt.Println("a unlocks:", a.Unlock(ctx))
	fmt.Println("b after waiting:", <-got)
	fmt.Println("b unlocks:", b.Unlock(ctx))
	// Output:
	// a: <nil>
	// b held off: true
	// a unlocks: <nil>
	// b after waiting: <nil>
	// b unlocks: <nil>
}

// Read-write, fair and fenced locks take the same three calls; the fenced
// lock adds a token that grows with every acquire, for the guarded store to
// reject writes from an older holder.
func ExampleRWLock() {
	ctx, c, p, done := exampleClient()
	defer done()

	rw := c.NewRWLock(p+"catalog", nil)
	reader := c.NewRWLock(p+"catalog", nil)
	fmt.Println("read:", rw.Reader().TryLock(ctx))
	fmt.Println("another read:", reader.Reader().TryLock(ctx))
	fmt.Println("write held off:", errors.Is(c.NewRWLock(p+"catalog", nil).Writer().TryLock(ctx), store.ErrNotObtained))
	fmt.Println("unlock reads:", rw.Reader().Unlock(ctx), reader.Reader().Unlock(ctx))

	fair := c.NewFairLock(p+"queue", nil)
	fmt.Println("fair:", fair.TryLock(ctx), fair.Unlock(ctx))

	fenced := c.NewFencedLock(p+"ledger", nil)
	_ = fenced.TryLock(ctx)
	first := fenced.Token()
	_ = fenced.Unlock(ctx)
	_ = fenced.TryLock(ctx)
	fmt.Println("fencing token grew:", fenced.Token() > first)
	_ = fenced.Unlock(ctx)
	// Output:
	// read: <nil>
	// another read: <nil>
	// write held off: true
	// unlock reads: <nil> <nil>
	// fair: <nil> <nil>
	// fencing token grew: true
}

// A token lock is a string SET NX PX to a random value; only the
// holder of that value can refresh or unlock it.
func ExampleTokenLock() {
	ctx, c, p, done := exampleClient()
	defer done()

	job := c.NewTokenLock(p+"nightly", &store.TokenLockOptions{Lease: 10 * time.Second})
	other := c.NewTokenLock(p+"nightly", &store.TokenLockOptions{RetryInterval: 5 * time.Millisecond, Attempts: 3})
	fmt.Println("lock:", job.TryLock(ctx))
	fmt.Println("other gives up after 3 attempts:", errors.Is(other.Lock(ctx), store.ErrNotObtained))
	fmt.Println("refresh:", job.Refresh(ctx))
	fmt.Println("other cannot unlock:", errors.Is(other.Unlock(ctx), store.ErrNotHeld))
	fmt.Println("unlock:", job.Unlock(ctx))
	// Output:
	// lock: <nil>
	// other gives up after 3 attempts: true
	// refresh: <nil>
	// other cannot unlock: true
	// unlock: <nil>
}
