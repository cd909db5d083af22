package main

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
)

// The demo's contention and deadlock. A queue lock is held for seconds at
// a time while workers queue for it in store's hand-off queue, so the
// console shows waiters with their identities. And every few minutes two
// services deadlock: each holds one lock and waits for the other's, and
// the watchdogs keep both leases alive until someone breaks one hold from
// the console; then both Lock calls return, the services let go and finish.
const (
	// demoQueue is held 1.5-3 s at a time by one of four workers; the
	// other three wait in line.
	demoQueue = "demo:lock:queue"
	// demoStock and demoCart are the deadlocked pair: "inventory-svc"
	// holds stock and waits for cart, "checkout-svc" the other way round.
	demoStock = "demo:deadlock:stock"
	demoCart  = "demo:deadlock:cart"
)

func (c *trafficConfig) deadlockEvery() time.Duration {
	if c == nil || c.DeadlockEvery <= 0 {
		return 3 * time.Minute
	}
	return c.DeadlockEvery
}

// queueWorker takes the queue lock, holds it a few seconds and lets go,
// forever; with four of them three are always queued.
func (t *traffic) queueWorker(ctx context.Context, app *store.Client, owner string) {
	l := newDemoLock(app, t.cfg.Prefix+demoQueue, owner, 0)
	for sleep(ctx, between(100*time.Millisecond, 500*time.Millisecond)) {
		if err := l.Lock(ctx); err != nil {
			t.lockFailed(ctx, demoQueue, err)
			continue
		}
		sleep(ctx, between(1500*time.Millisecond, 3*time.Second))
		t.release(ctx, demoQueue, l.Unlock)
	}
}

// deadlocker starts a deadlock a sixth of the period after the demo
// starts, then a period after each one was broken.
func (t *traffic) deadlocker(ctx context.Context, rdb redis.UniversalClient) {
	every := t.cfg.deadlockEvery()
	services := []*store.Client{
		store.New(rdb, &store.Options{App: "inventory-svc", Version: "v3.1.0"}),
		store.New(rdb, &store.Options{App: "checkout-svc", Version: "v0.9.4"}),
	}
	defer func() {
		for _, s := range services {
			_ = s.Close()
		}
	}()
	for wait := every / 6; sleep(ctx, wait); wait = every {
		t.deadlockRound(ctx, services[0], services[1])
	}
}

// deadlockRound makes a hold a and b each take one lock, then wait for the
// other's. It returns once both waits ended: broken by a force-unlock, or
// ctx ended.
func (t *traffic) deadlockRound(ctx context.Context, a, b *store.Client) {
	stock, cart := t.cfg.Prefix+demoStock, t.cfg.Prefix+demoCart
	var held, done sync.WaitGroup
	held.Add(2)
	side := func(app *store.Client, owner, mine, theirs string) {
		defer done.Done()
		hold := newDemoLock(app, mine, owner, 0)
		want := newDemoLock(app, theirs, owner, 0)
		err := hold.Lock(ctx)
		held.Done()
		if err != nil {
			t.lockFailed(ctx, mine, err)
			return
		}
		defer t.release(ctx, mine, hold.Unlock) // ErrNotHeld once broken: logged at debug
		// Both hold before either waits.
		held.Wait()
		if err := want.Lock(ctx); err != nil {
			t.lockFailed(ctx, theirs, err)
			return
		}
		t.n.deadlocksBroken.Add(1)
		sleep(ctx, between(100*time.Millisecond, 300*time.Millisecond)) // the work both locks guard
		t.release(ctx, theirs, want.Unlock)
	}
	done.Add(2)
	go side(a, "reserve-1", stock, cart)
	go side(b, "checkout-7", cart, stock)
	done.Wait()
}
