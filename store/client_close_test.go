package store

import (
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// Close retires the Client's lock-wait subscription when nobody waits,
// instead of leaving its connection and receive goroutine to the idle
// timer (waitIdleClose, 10 s): an application that closes the Client and
// then its Redis client would otherwise leave that goroutine retrying a
// closed pool until the timer fires.
func TestCloseRetiresIdleWaitSubscription(t *testing.T) {
	holderClient, _ := lockTestClient(t)
	waiterClient, rdb := lockTestClient(t)
	t.Cleanup(func() { holderClient.Close() })
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)

	holder := holderClient.NewLock(name, &LockOptions{Lease: 10 * time.Second})
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := waiterClient.NewLock(name, &LockOptions{RetryInterval: time.Minute})
	redistest.UnlockAtEnd(t, waiter)
	// waitThenRelease has the waiter block in Lock (subscribed) until the
	// holder lets go.
	waitThenRelease := func() {
		t.Helper()
		got := make(chan error, 1)
		go func() { got <- waiter.Lock(ctx) }()
		redistest.WaitForSubscriber(t, rdb, wire.UnlockChannel(name))
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
	waitThenRelease()
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	hub := &sharedFor(waiterClient).hub
	hub.mu.Lock()
	open := hub.ps != nil
	hub.mu.Unlock()
	if !open {
		t.Fatal("the wait subscription is already closed: the test no longer shows what Close does")
	}

	if err := waiterClient.Close(); err != nil {
		t.Fatal(err)
	}
	hub.mu.Lock()
	open, stopped := hub.ps != nil, hub.stop == nil
	hub.mu.Unlock()
	if open || !stopped {
		t.Fatalf("after Close, nobody waiting: subscription open %v, receive loop stopped %v; want false, true", open, stopped)
	}

	// The Client still works after Close: a later wait opens a new one.
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	waitThenRelease()
}
