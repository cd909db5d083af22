package store

import (
	_ "embed"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

//go:embed testdata/redisson_fairlock_acquire.lua
var redissonFairAcquireSrc string

var redissonFairAcquire = redis.NewScript(redissonFairAcquireSrc)

// Redisson clients queued ahead of lockwarden waiters take the lock one
// after the other; each of their acquisitions moves every deadline one
// Redisson wait time (300 s) earlier. The lockwarden waiter must keep its
// place (FIFO) and get the lock after them. A deadline chained only 5 s
// behind theirs would fall into the past after the second Redisson
// acquisition, and the waiter would be dropped and queued again at the
// back.
func TestFairLockKeepsPlaceBehindRedissonClients(t *testing.T) {
	c, rdb := lockTestClient(t)
	ctx := redistest.Context(t, 30*time.Second)
	name := redistest.Prefix(t) + "fair"
	keys := []string{name, wire.FairLockQueueKey(name), wire.FairLockTimeoutKey(name)}
	const redissonWait = 300000
	foreign := func(id string) (int64, bool) {
		t.Helper()
		n, err := redissonFairAcquire.Run(ctx, rdb, keys, 60000, id, redissonWait, time.Now().UnixMilli()).Int64()
		if err == redis.Nil {
			return 0, true
		}
		if err != nil {
			t.Fatalf("foreign acquire %s: %v", id, err)
		}
		return n, false
	}
	holder := c.NewFairLock(name, &LockOptions{NoWatchdog: true})
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := foreign("java-1"); ok {
		t.Fatal("java-1 took a held lock")
	}
	if _, ok := foreign("java-2"); ok {
		t.Fatal("java-2 took a held lock")
	}
	mine := c.NewFairLock(name, &LockOptions{NoWatchdog: true})
	if _, ok, err := mine.attempt(ctx, true, nil); err != nil || ok {
		t.Fatalf("lockwarden waiter: ok=%v err=%v, want queued", ok, err)
	}
	if _, ok := foreign("java-3"); ok {
		t.Fatal("java-3 took a held lock")
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"java-1", "java-2"} {
		if _, ok := foreign(id); !ok {
			t.Fatalf("%s, first in the queue, did not get the free lock", id)
		}
		rdb.Del(ctx, name) // its release (a Redisson unlock deletes the hash)
	}
	// On Redisson's scale a waiter that reaches the head keeps a whole
	// thread wait of slack, as Redisson's own waiters do: with only 5 s, a
	// Redisson holder of a few seconds more would make it a dead head,
	// dropped by the next script and re-queued last.
	due := int64(rdb.ZScore(ctx, keys[2], mine.holder).Val())
	if slack := due - time.Now().UnixMilli(); slack < redissonWait-5000 {
		t.Fatalf("lockwarden waiter's deadline is %d ms away after two Redisson acquisitions, want about a thread wait (%d ms)", slack, redissonWait)
	}
	// The lockwarden waiter is now first: it must still be queued, at the head.
	if q := rdb.LRange(ctx, keys[1], 0, -1).Val(); len(q) != 2 || q[0] != mine.holder || q[1] != "java-3" {
		t.Fatalf("queue after two Redisson acquisitions = %v, want [%s java-3]", q, mine.holder)
	}
	if _, ok := foreign("java-3"); ok {
		t.Fatal("java-3 barged past the lockwarden waiter")
	}
	if _, ok, err := mine.attempt(ctx, true, nil); err != nil || !ok {
		t.Fatalf("lockwarden waiter at the head of a free lock: ok=%v err=%v", ok, err)
	}
	if err := mine.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := foreign("java-3"); !ok {
		t.Fatal("java-3 starved")
	}
	rdb.Del(ctx, keys...)
}
