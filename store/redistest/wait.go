package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Patience bounds every wait in this file. It only ends a failing wait: a
// wait that succeeds returns as soon as its event happens, so the bound is
// set for a loaded machine (-race, packages in parallel, other processes)
// rather than for how long the event usually takes. It is also the least
// EventuallyWithin waits: a shorter bound there only turned a slow machine
// into a red run (a Cluster discovery took over 10 s beside six other
// processes' builds), never a wrong result into a right one.
const Patience = 30 * time.Second

// pollEvery is how often Eventually looks again.
const pollEvery = 10 * time.Millisecond

// Eventually polls cond until it returns true and fails t, naming what it
// waited for, when Patience passes first.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, Patience, what, cond)
}

// EventuallyWithin is Eventually bounded by d, or by Patience when that is
// longer.
func EventuallyWithin(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	d = max(d, Patience)
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting until %s", d, what)
		}
		time.Sleep(pollEvery)
	}
}

// Context is a context that ends after d or when t ends, whichever comes
// first.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// ReceiveMessage waits at most d for the next message on sub, skipping
// subscription confirmations.
func ReceiveMessage(sub *redis.PubSub, d time.Duration) (*redis.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		m, err := sub.ReceiveTimeout(ctx, d)
		if err != nil {
			return nil, err
		}
		if msg, ok := m.(*redis.Message); ok {
			return msg, nil
		}
	}
}

// WaitForSubscriber waits until someone listens on channel on the node rdb
// talks to (PUBSUB NUMSUB is per node).
func WaitForSubscriber(t testing.TB, rdb redis.Cmdable, channel string) {
	t.Helper()
	Eventually(t, "someone subscribes to "+channel, func() bool {
		return rdb.PubSubNumSub(t.Context(), channel).Val()[channel] > 0
	})
}

// WaitRenewed waits until key's time to live has gone up n times, each a
// renewal seen (left alone, a TTL only goes down). Tests of a watchdog wait
// for its renewals this way instead of sleeping past a lease.
func WaitRenewed(t testing.TB, rdb redis.Cmdable, key string, n int) {
	t.Helper()
	last, seen := time.Duration(-1), 0
	Eventually(t, "renewals of "+key, func() bool {
		ttl, err := rdb.PTTL(t.Context(), key).Result()
		if err != nil || ttl < 0 {
			t.Fatalf("%s while waiting for its renewal: ttl %v, %v (expired?)", key, ttl, err)
		}
		if last >= 0 && ttl > last {
			seen++
		}
		last = ttl
		return seen >= n
	})
}

// Unlocker is any lock handle: what UnlockAtEnd releases.
type Unlocker interface {
	Unlock(ctx context.Context) error
}

// UnlockAtEnd releases every level l may still hold when t ends, so a
// failing test does not leave a watchdog renewing into the next test.
func UnlockAtEnd(t testing.TB, l Unlocker) {
	t.Cleanup(func() {
		ctx := context.Background()
		for i := 0; i < 10 && l.Unlock(ctx) == nil; i++ {
		}
	})
}
