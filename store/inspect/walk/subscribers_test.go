package walk

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// redissonWaiter subscribes to channel as a waiting Redisson client does:
// SUBSCRIBE, or SSUBSCRIBE on a Cluster with sharded pub/sub.
func redissonWaiter(t *testing.T, channel string, sharded bool) {
	t.Helper()
	rdb := redistest.Universal(t)
	var ps *redis.PubSub
	if sharded {
		ps = rdb.SSubscribe(t.Context(), channel)
	} else {
		ps = rdb.Subscribe(t.Context(), channel)
	}
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(t.Context()); err != nil { // the confirmation
		t.Fatal(err)
	}
}

// A held Redisson lock's waiters are counted from its channel's
// subscribers, without the console's own sharded subscription and without
// the store clients queued in its hand-off queue.
func TestSubscribersCounted(t *testing.T) {
	e := newLightEnv(t, 5)
	ctx := t.Context()
	_, cluster := e.rdb.(*redis.ClusterClient)
	sharded, err := wire.ShardedPubSub(ctx, e.rdb)
	if err != nil {
		t.Fatal(err)
	}
	if cluster && !sharded {
		t.Skip("a Cluster without sharded pub/sub: subscribers are not counted")
	}
	name := e.p + "rlock"
	e.foreignLock(t, name)
	if cluster {
		// The console's event stream, watching the lock: its own sharded
		// subscription is not a waiter.
		es, err := e.w.src.(*inspect.Inspector).SubscribeEvents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { es.Close() })
		if err := es.Watch(ctx, []inspect.LockInfo{{Name: name, Channel: wire.UnlockChannel(name)}}); err != nil {
			t.Fatal(err)
		}
	}
	redissonWaiter(t, wire.UnlockChannel(name), sharded)
	redissonWaiter(t, wire.UnlockChannel(name), sharded)
	// A store client's queued Lock call listens on the channel as well.
	waiter := store.New(redistest.Universal(t), &store.Options{NoRegistry: true}).NewLock(name, nil)
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	t.Cleanup(func() { e.rdb.Del(ctx, wire.LockQueueKey(name), wire.LockEntriesKey(name)) })

	var got *inspect.LockInfo
	redistest.Eventually(t, "the lock's subscribers counted beside its store waiter", func() bool {
		s := e.tick(t, []string{name})
		got = lockIn(s, name)
		return got != nil && got.WaitersTotal == 1 && got.Subscribers != nil
	})
	if *got.Subscribers != 2 {
		t.Errorf("subscribers %d, want the 2 Redisson clients", *got.Subscribers)
	}
	sent := e.sent.TakeLog()
	if sent.Count("pubsub", "") == 0 {
		t.Errorf("no PUBSUB in the ticks: %v", sent)
	}

	e.rdb.Del(ctx, name)
	e.rdb.Publish(ctx, wire.UnlockChannel(name), wire.UnlockMessage)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(redistest.Patience):
		t.Fatal("the store waiter did not get the released lock")
	}
	_ = waiter.Unlock(ctx)
}

// A store waiter joining an idle held lock changes neither its hash nor,
// without notifications, anything the idle turn would see for seconds;
// its subscription to the lock's channel changes the count, which makes
// the lock busy, so its queue shows within a few ticks.
func TestWaiterOnIdleLockShowsWithinTicks(t *testing.T) {
	e := newLightEnv(t, 25)
	ctx := t.Context()
	_, cluster := e.rdb.(*redis.ClusterClient)
	if sharded, err := wire.ShardedPubSub(ctx, e.rdb); err != nil || (cluster && !sharded) {
		t.Skipf("subscribers are not counted here (%v)", err)
	}
	name := e.p + "idle-held"
	e.foreignLock(t, name)
	e.settle(t, []string{name})
	for range 3 { // idle now: read on its turn only
		e.tick(t, []string{name})
	}
	waiter := store.New(redistest.Universal(t), &store.Options{NoRegistry: true}).NewLock(name, nil)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = waiter.Lock(wctx) }()
	t.Cleanup(func() { e.rdb.Del(context.Background(), wire.LockQueueKey(name), wire.LockEntriesKey(name)) })
	redistest.Eventually(t, "the waiter queued", func() bool {
		return e.rdb.Exists(ctx, wire.LockQueueKey(name)).Val() == 1
	})
	for i := 1; ; i++ {
		if l := lockIn(e.tick(t, []string{name}), name); l != nil && l.WaitersTotal == 1 {
			t.Logf("the waiter showed at tick %d", i)
			break
		}
		if i == 4 {
			t.Fatalf("the waiter did not show within %d ticks (the idle turn is every %d)", i, e.every)
		}
	}
}
