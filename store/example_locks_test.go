package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
// RetryInterval; Lock waits as long as ctx allows.
func ExampleSpinLock() {
	ctx, c, p, done := exampleClient()
	defer done()

	opts := &store.LockOptions{Lease: 3 * time.Second, RetryInterval: 10 * time.Millisecond}
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

// A read-write lock's two sides are locks of their own: readers hold
// together, a writer alone.
func ExampleRWLock() {
	ctx, c, p, done := exampleClient()
	defer done()

	rw := c.NewRWLock(p+"catalog", nil)
	reader := c.NewRWLock(p+"catalog", nil)
	fmt.Println("read:", rw.Reader().TryLock(ctx))
	fmt.Println("another read:", reader.Reader().TryLock(ctx))
	fmt.Println("write held off:", errors.Is(c.NewRWLock(p+"catalog", nil).Writer().TryLock(ctx), store.ErrNotObtained))
	fmt.Println("unlock reads:", rw.Reader().Unlock(ctx), reader.Reader().Unlock(ctx))
	fmt.Println("write:", rw.Writer().TryLock(ctx), rw.Writer().Unlock(ctx))
	// Output:
	// read: <nil>
	// another read: <nil>
	// write held off: true
	// unlock reads: <nil> <nil>
	// write: <nil> <nil>
}

// A fair lock goes to its waiters in the order they came: once one waits,
// a newcomer cannot take the lock past it, even the moment it is free.
func ExampleFairLock() {
	ctx, c, p, done := exampleClient()
	defer done()

	name := p + "invoices"
	first, second, late := c.NewFairLock(name, nil), c.NewFairLock(name, nil), c.NewFairLock(name, nil)
	fmt.Println("first:", first.TryLock(ctx))

	got := make(chan error)
	go func() { got <- second.Lock(ctx) }()
	// Redisson's queue of waiters: wait until second stands in it.
	queue := "redisson_lock_queue:{" + name + "}"
	for c.Redis().LLen(ctx, queue).Val() == 0 && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	fmt.Println("first unlocks:", first.Unlock(ctx))
	fmt.Println("late is held off:", errors.Is(late.TryLock(ctx), store.ErrNotObtained))
	fmt.Println("second after waiting:", <-got)
	fmt.Println("second unlocks:", second.Unlock(ctx))
	// Output:
	// first: <nil>
	// first unlocks: <nil>
	// late is held off: true
	// second after waiting: <nil>
	// second unlocks: <nil>
}

// A fenced lock hands every acquire a larger token. The guarded resource
// keeps the largest token it has seen and refuses writes that carry a
// smaller one, so a holder that lost the lock without noticing (a pause
// longer than its lease) cannot overwrite its successor's work.
func ExampleFencedLock() {
	ctx, c, p, done := exampleClient()
	defer done()

	var highest int64 // the guarded resource's record
	write := func(token int64) bool {
		if token < highest {
			return false
		}
		highest = token
		return true
	}

	name := p + "ledger"
	paused := c.NewFencedLock(name, &store.LockOptions{Lease: 50 * time.Millisecond, NoWatchdog: true})
	_ = paused.Lock(ctx)
	stale := paused.Token()
	time.Sleep(100 * time.Millisecond) // its lease runs out meanwhile

	next := c.NewFencedLock(name, nil)
	fmt.Println("next holder:", next.Lock(ctx))
	fmt.Println("next holder's token is larger:", next.Token() > stale)
	fmt.Println("next holder writes:", write(next.Token()))
	fmt.Println("paused holder's write refused:", !write(stale))
	current, _ := next.CurrentToken(ctx)
	fmt.Println("current token is next's:", current == next.Token())
	fmt.Println("unlock:", next.Unlock(ctx))
	// Output:
	// next holder: <nil>
	// next holder's token is larger: true
	// next holder writes: true
	// paused holder's write refused: true
	// current token is next's: true
	// unlock: <nil>
}

// A token lock is a string SET NX PX to a random value, its HolderID;
// only a handle holding that value can refresh or unlock it.
func ExampleTokenLock() {
	ctx, c, p, done := exampleClient()
	defer done()

	job := c.NewTokenLock(p+"nightly", &store.LockOptions{Lease: 10 * time.Second})
	other := c.NewTokenLock(p+"nightly", &store.LockOptions{RetryInterval: 5 * time.Millisecond, Attempts: 3})
	fmt.Println("lock:", job.TryLock(ctx))
	fmt.Println("other gives up after 3 attempts:", errors.Is(other.Lock(ctx), store.ErrNotObtained))
	fmt.Println("refresh:", job.Refresh(ctx))
	fmt.Println("other cannot unlock:", errors.Is(other.Unlock(ctx), store.ErrNotHeld))
	// Another process given job's HolderID holds the same lock.
	handedOver := c.NewTokenLock(p+"nightly", &store.LockOptions{Owner: job.HolderID()})
	fmt.Println("unlock with the value:", handedOver.Unlock(ctx))
	// Output:
	// lock: <nil>
	// other gives up after 3 attempts: true
	// refresh: <nil>
	// other cannot unlock: true
	// unlock with the value: <nil>
}

// One LockOptions serves every kind, and every lock handle answers the same
// calls: TryLock, Lock, Unlock, Refresh and HolderID. Without a watchdog
// the lease runs until Refresh restarts it.
func ExampleLockOptions() {
	ctx, c, p, done := exampleClient()
	defer done()

	opts := &store.LockOptions{Owner: "billing-7", Lease: 10 * time.Second, NoWatchdog: true}
	rw := c.NewRWLock(p+"rw", opts)
	for _, l := range []interface {
		TryLock(context.Context) error
		Refresh(context.Context) error
		Unlock(context.Context) error
		HolderID() string
	}{
		c.NewLock(p+"lock", opts), c.NewSpinLock(p+"spin", opts), rw.Reader(), rw.Writer(),
		c.NewFairLock(p+"fair", opts), c.NewFencedLock(p+"fenced", opts), c.NewTokenLock(p+"token", opts),
	} {
		err := l.TryLock(ctx)
		fmt.Println(strings.Contains(l.HolderID(), "billing-7"), err, l.Refresh(ctx), l.Unlock(ctx))
	}
	// Output:
	// true <nil> <nil> <nil>
	// true <nil> <nil> <nil>
	// true <nil> <nil> <nil>
	// true <nil> <nil> <nil>
	// true <nil> <nil> <nil>
	// true <nil> <nil> <nil>
	// true <nil> <nil> <nil>
}
