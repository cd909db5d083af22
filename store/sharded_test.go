package store

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// shardedWaiter subscribes to ch the way Redisson >= 3.22 does on a Redis 7
// Cluster (SSUBSCRIBE only, on the master of ch's slot) and returns once
// the subscription is confirmed.
func shardedWaiter(t *testing.T, cc *redis.ClusterClient, ch string) *redis.PubSub {
	t.Helper()
	ps := cc.SSubscribe(t.Context(), ch)
	t.Cleanup(func() { ps.Close() })
	msg, err := ps.ReceiveTimeout(t.Context(), 10*time.Second)
	if sub, ok := msg.(*redis.Subscription); err != nil || !ok || sub.Kind != "ssubscribe" {
		t.Fatalf("SSUBSCRIBE %s: %v %v", ch, msg, err)
	}
	return ps
}

func receiveSharded(t *testing.T, ps *redis.PubSub, what string) *redis.Message {
	t.Helper()
	msg, err := ps.ReceiveTimeout(t.Context(), 10*time.Second)
	m, ok := msg.(*redis.Message)
	if err != nil || !ok {
		t.Fatalf("%s: no sharded message (%v, %v)", what, msg, err)
	}
	return m
}

// Interop with Redisson >= 3.22 on a Cluster of Redis 7, both ways: a
// waiter that only SSUBSCRIBEs hears store's releases (each kind's own
// channel), and store's waiter is woken by a release announced only with
// SPUBLISH. Before the SPUBLISH flag and the waiters' SSUBSCRIBE, neither
// heard the other: the first two checks got no message and the waiter slept
// until the holder's lease ran out.
func TestShardedPubSubInterop(t *testing.T) {
	c := redistest.StartCluster(t, nil)
	cc := redistest.NewClusterClient(t, c)
	app := New(cc, nil)
	ctx := t.Context()

	t.Run("Redisson waiter hears Unlock", func(t *testing.T) {
		for _, name := range []string{"interop:plain", "{interop}:tagged"} {
			l := app.NewLock(name, nil)
			if err := l.TryLock(ctx); err != nil {
				t.Fatal(err)
			}
			ps := shardedWaiter(t, cc, wire.UnlockChannel(name))
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if m := receiveSharded(t, ps, "Unlock of "+name); m.Channel != wire.UnlockChannel(name) || m.Payload != unlockMessage {
				t.Errorf("sharded message %+v", m)
			}
		}
	})
	t.Run("Redisson waiter hears read-write and fair unlocks", func(t *testing.T) {
		rw := app.NewRWLock("interop:rw", nil)
		if err := rw.Writer().TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		ps := shardedWaiter(t, cc, wire.RWLockChannel("interop:rw"))
		if err := rw.Writer().Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if m := receiveSharded(t, ps, "rwlock unlock"); m.Payload != "1" { // "1": a writer left
			t.Errorf("rwlock sharded message %+v", m)
		}

		fair := app.NewFairLock("interop:fair", nil)
		if err := fair.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		next := app.NewFairLock("interop:fair", nil)
		queued := make(chan error, 1)
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		wch := wire.UnlockChannel("interop:fair") + ":" + next.HolderID()
		ps2 := shardedWaiter(t, cc, wch)
		go func() { queued <- next.Lock(wctx) }()
		// The waiter is queued once its first attempt was rejected.
		deadline := time.Now().Add(10 * time.Second)
		for cc.LLen(ctx, wire.FairLockQueueKey("interop:fair")).Val() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if err := fair.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if m := receiveSharded(t, ps2, "fair unlock"); m.Channel != wch {
			t.Errorf("fair sharded message %+v", m)
		}
		if err := <-queued; err != nil {
			t.Fatalf("fair waiter: %v", err)
		}
		_ = next.Unlock(ctx)
	})
	t.Run("store waiter hears SPUBLISH only", func(t *testing.T) {
		name := "interop:foreign"
		// A Redisson holder with a long lease, released the Redisson way on
		// a sharded Cluster: delete, then SPUBLISH only.
		if err := cc.HSet(ctx, name, "2b7a6c1e-0d3f-4e8a-9b5c-7d6e5f4a3b2c:1", 1).Err(); err != nil {
			t.Fatal(err)
		}
		cc.PExpire(ctx, name, time.Minute)
		waiter := app.NewLock(name, &LockOptions{RetryInterval: time.Minute})
		got := make(chan error, 1)
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		go func() { got <- waiter.Lock(wctx) }()
		// Wait until the waiter is queued, so its subscriptions are confirmed.
		deadline := time.Now().Add(10 * time.Second)
		for cc.ZCard(ctx, wire.LockQueueKey(name)).Val() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		wakeUps := func() int64 {
			hub := &sharedFor(app).hub
			hub.mu.Lock()
			defer hub.mu.Unlock()
			return hub.shardedWakeUps
		}
		before := wakeUps()
		cc.Del(ctx, name)
		if err := cc.SPublish(ctx, wire.UnlockChannel(name), unlockMessage).Err(); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		_ = waiter.Unlock(ctx)
		// It would also have found the lock free at its next queue-entry
		// refresh: count that the SPUBLISH reached it.
		if wakes := wakeUps() - before; wakes != 1 {
			t.Fatalf("the waiter's sharded subscription received %d messages, want the one SPUBLISH", wakes)
		}
	})
}

// A single node (or a Redis 6 Cluster) decides classic pub/sub only.
func TestPubsubModeSingleNode(t *testing.T) {
	if redistest.SharedCluster() != nil {
		t.Skip("the shared Redis is a Cluster")
	}
	app := New(redistest.Client(t), nil)
	if err := app.decidePubsub(t.Context()); err != nil {
		t.Fatal(err)
	}
	if b, _ := app.pubsub.MarshalBinary(); string(b) != "0" || app.pubsub.sharded() {
		t.Fatalf("single node flag %q", b)
	}
}
