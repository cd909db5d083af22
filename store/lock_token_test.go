package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// tokenWaiters is how many Lock calls listen on name's token-lock channel.
func tokenWaiters(c *Client, name string) int {
	hub := &sharedFor(c).hub
	hub.mu.Lock()
	defer hub.mu.Unlock()
	if cw := hub.channels[wire.TokenLockChannel(name)]; cw != nil {
		return len(cw.members)
	}
	return 0
}

// A token lock's Lock waits on the release channel: with a retry of an
// hour and a holder's lease of a minute, only the release's message can
// wake it within the test's bound. A release by the holder and a
// force-unlock by the console (the same script) both announce it.
func TestTokenLockWaitsForRelease(t *testing.T) {
	rdb := redistest.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	name := redistest.Prefix(t) + "token"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name, wire.HeldKey(name)) })
	c := New(rdb, &Options{NoRegistry: true})
	t.Cleanup(func() { _ = c.Close() })
	holder := c.NewTokenLock(name, &LockOptions{Lease: time.Minute})
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := c.NewTokenLock(name, &LockOptions{Lease: time.Minute, RetryInterval: time.Hour})
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	for i := 0; tokenWaiters(c, name) == 0; i++ {
		if i == 500 {
			t.Fatal("the waiter never listened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if got := rdb.Get(ctx, name).Val(); got != waiter.HolderID() {
		t.Fatalf("lock holds %q, want the waiter's token", got)
	}

	// Attempts still bound the wait: the last *LockedError comes back.
	bounded := c.NewTokenLock(name, &LockOptions{RetryInterval: time.Millisecond, Attempts: 3})
	var le *LockedError
	if err := bounded.Lock(ctx); !errors.As(err, &le) || le.TTL <= 0 {
		t.Fatalf("bounded Lock = %v, want a *LockedError with the holder's lease", err)
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
