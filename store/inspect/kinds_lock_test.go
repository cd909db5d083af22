package inspect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

const kindUUID = "6a1f0c2e-93b4-4d7a-8e5f-1b2c3d4e5f60"

func kindSetup(t *testing.T) (context.Context, testPair, *redis.Client, string) {
	t.Helper()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	inspecttest.Cleanup(t, rdb, p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, newPair(t, rdb), rdb, p
}

func kindSubscribe(t *testing.T, ctx context.Context, rdb *redis.Client, pattern string) *redis.PubSub {
	t.Helper()
	ps := rdb.PSubscribe(ctx, pattern)
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	return ps
}

// kindMessages collects what arrives within wait.
func kindMessages(ps *redis.PubSub, wait time.Duration) []*redis.Message {
	var out []*redis.Message
	timer := time.After(wait)
	for {
		select {
		case m := <-ps.Channel():
			out = append(out, m)
		case <-timer:
			return out
		}
	}
}

// Redisson RReadWriteLock, written with the commands its read and write
// lock scripts send.
func TestKindRWLock(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "rw"
	r1, r2 := kindUUID+":1", kindUUID+":2"
	rdb.HSet(ctx, name, "mode", "read", r1, 2, r2, 1)
	rdb.Set(ctx, "{"+name+"}:"+r1+":rwlock_timeout:1", 1, 20*time.Second)
	rdb.Set(ctx, "{"+name+"}:"+r1+":rwlock_timeout:2", 1, 20*time.Second)
	rdb.Set(ctx, "{"+name+"}:"+r2+":rwlock_timeout:1", 1, 20*time.Second)
	rdb.PExpire(ctx, name, 30*time.Second)
	wname := p + "w"
	rdb.HSet(ctx, wname, "mode", "write", kindUUID+":9:write", 1)
	rdb.PExpire(ctx, wname, 30*time.Second)
	rdb.HSet(ctx, p+"app", "mode", "read", "user", "x") // not a lock
	rdb.PExpire(ctx, p+"app", time.Minute)

	d, err := discover(ctx, c.Inspector, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != 2 || d.Locks[0].Name != name || d.Locks[1].Name != wname {
		t.Fatalf("Discover locks = %+v, want the two rwlocks only", d.Locks)
	}
	l := d.Locks[0]
	if l.Kind != KindRWLock || l.Mode != "read" || len(l.Holders) != 2 || l.Holders[0].ID != r1 ||
		l.Holders[0].Count != 2 || l.Holders[0].Mode != "read" || l.Holders[0].LeaseMS <= 0 || l.Channel != "redisson_rwlock:{"+name+"}" {
		t.Fatalf("rwlock = %+v", l)
	}

	ps := kindSubscribe(t, ctx, rdb, "redisson_rwlock:*")
	// One reader of two: its field and level keys go, nothing is published.
	if err := c.ForceUnlock(ctx, name, r1); err != nil {
		t.Fatal(err)
	}
	if f := rdb.HGetAll(ctx, name).Val(); len(f) != 2 || f[r2] != "1" || f["mode"] != "read" {
		t.Fatalf("after removing one reader: %v", f)
	}
	if n := rdb.Exists(ctx, "{"+name+"}:"+r1+":rwlock_timeout:1", "{"+name+"}:"+r1+":rwlock_timeout:2").Val(); n != 0 {
		t.Fatalf("%d level keys of the removed reader survived", n)
	}
	if rdb.Exists(ctx, "{"+name+"}:"+r2+":rwlock_timeout:1").Val() != 1 {
		t.Fatal("the other reader's level key was deleted")
	}
	if msgs := kindMessages(ps, 300*time.Millisecond); len(msgs) != 0 {
		t.Fatalf("published %v while a reader remains", msgs)
	}
	if err := c.ForceUnlock(ctx, name, r1); !errors.Is(err, ErrHolderChanged) {
		t.Fatalf("second force-unlock of the same reader = %v, want ErrHolderChanged", err)
	}
	// The last reader: lock deleted, "0" on the rwlock channel.
	if err := c.ForceUnlock(ctx, name, r2); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("lock survived its last reader")
	}
	msgs := kindMessages(ps, time.Second)
	if len(msgs) != 1 || msgs[0].Channel != "redisson_rwlock:{"+name+"}" || msgs[0].Payload != "0" {
		t.Fatalf("messages %v, want one \"0\" on the rwlock channel", msgs)
	}
	// The writer: "1", Redisson's READ_UNLOCK_MESSAGE.
	winfo, err := c.GetLock(ctx, wname)
	if err != nil || winfo.Mode != "write" {
		t.Fatalf("GetLock(writer) = %+v, %v", winfo, err)
	}
	if plan := winfo.ForceUnlockPlan(kindUUID + ":9:write"); plan.Message != "1" || plan.Channel != wire.RWLockChannel(wname) {
		t.Errorf("plan = %+v", plan)
	}
	if err := c.ForceUnlock(ctx, wname, kindUUID+":9:write"); err != nil {
		t.Fatal(err)
	}
	msgs = kindMessages(ps, time.Second)
	if len(msgs) != 1 || msgs[0].Payload != "1" || rdb.Exists(ctx, wname).Val() != 0 {
		t.Fatalf("writer release: messages %v, exists %d", msgs, rdb.Exists(ctx, wname).Val())
	}
}

// Redisson RFairLock with two waiters queued as its acquire script queues
// them; force-unlock wakes only the head on its own channel.
func TestKindFairLock(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "fair"
	holder, w1, w2, stale := kindUUID+":1", kindUUID+":2", kindUUID+":3", kindUUID+":4"
	now := redistest.NowMS(t, rdb)
	rdb.HSet(ctx, name, holder, 1)
	rdb.PExpire(ctx, name, 30*time.Second)
	rdb.RPush(ctx, wire.FairLockQueueKey(name), stale, w1, w2)
	rdb.ZAdd(ctx, wire.FairLockTimeoutKey(name),
		redis.Z{Score: float64(now - 1000), Member: stale},
		redis.Z{Score: float64(now + 330000), Member: w1},
		redis.Z{Score: float64(now + 630000), Member: w2})

	info, err := c.GetLock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != KindFairLock || info.WaitersTotal != 3 || len(info.Waiters) != 3 || info.Waiters[1].ID != w1 ||
		info.Waiters[1].RemainingMS < 300000 || info.Waiters[1].Channel != wire.UnlockChannel(name)+":"+w1 || info.Waiters[0].RemainingMS > 0 {
		t.Fatalf("fair lock = %+v", info)
	}
	if plan := info.ForceUnlockPlan(holder); plan.Channel != wire.UnlockChannel(name)+":"+w1 {
		t.Errorf("plan wakes %q, want %s's channel", plan.Channel, w1)
	}
	ps := kindSubscribe(t, ctx, rdb, "redisson_lock__channel:*")
	if err := c.ForceUnlock(ctx, name, holder); err != nil {
		t.Fatal(err)
	}
	msgs := kindMessages(ps, time.Second)
	if len(msgs) != 1 || msgs[0].Channel != wire.UnlockChannel(name)+":"+w1 || msgs[0].Payload != "0" {
		t.Fatalf("messages %v, want one \"0\" on %s's channel", msgs, w1)
	}
	if ev, ok := eventFromMessage(msgs[0], time.Now()); !ok || ev.Name != name || ev.Waiter != w1 {
		t.Errorf("event = %+v, want lock %q waiter %q", ev, name, w1)
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("lock survived")
	}
	if q := rdb.LRange(ctx, wire.FairLockQueueKey(name), 0, -1).Val(); len(q) != 2 || q[0] != w1 {
		t.Fatalf("queue = %v, want the stale waiter dropped and w1, w2 kept", q)
	}
}

// Redisson RFencedLock: the token survives a force-unlock.
func TestKindFencedLock(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "fenced"
	holder := kindUUID + ":5"
	rdb.Set(ctx, wire.FencingTokenKey(name), 41, 0)
	rdb.Incr(ctx, wire.FencingTokenKey(name))
	rdb.HIncrBy(ctx, name, holder, 1)
	rdb.PExpire(ctx, name, 30*time.Second)
	t.Cleanup(func() { rdb.Del(context.Background(), wire.FencingTokenKey(name)) })

	d, err := discover(ctx, c.Inspector, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != 1 || d.Locks[0].Kind != KindFencedLock || d.Locks[0].FencingToken != 42 {
		t.Fatalf("Discover = %+v", d.Locks)
	}
	ps := kindSubscribe(t, ctx, rdb, "redisson_lock__channel:*")
	if err := c.ForceUnlock(ctx, name, holder); err != nil {
		t.Fatal(err)
	}
	if msgs := kindMessages(ps, time.Second); len(msgs) != 1 || msgs[0].Channel != wire.UnlockChannel(name) || msgs[0].Payload != "0" {
		t.Fatalf("messages %v", msgs)
	}
	if v := rdb.Get(ctx, wire.FencingTokenKey(name)).Val(); v != "42" || rdb.Exists(ctx, name).Val() != 0 {
		t.Fatalf("token %q (want 42 kept), lock exists %d", v, rdb.Exists(ctx, name).Val())
	}
}

// SET NX PX token locks (redsync's layout): listed only by pattern; force-unlock
// compares the token.
func TestKindTokenLock(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "lock:job"
	rdb.SetNX(ctx, name, "5f0c9a1e-token", 30*time.Second)
	rdb.Set(ctx, p+"cache:x", "5f0c9a1e-token", 30*time.Second)

	d, _ := discover(ctx, c.Inspector, p+"*")
	if len(d.Locks) != 0 {
		t.Fatalf("without patterns strings were listed: %+v", d.Locks)
	}
	if err := c.SetObjectPatterns(ObjectPatterns{TokenLocks: []string{p + "lock:*"}}); err != nil {
		t.Fatal(err)
	}
	d, err := discover(ctx, c.Inspector, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != 1 || d.Locks[0].Kind != KindTokenLock || d.Locks[0].Holders[0].ID != "5f0c9a1e-token" || d.Locks[0].PTTL <= 0 {
		t.Fatalf("Discover = %+v", d.Locks)
	}
	smp, err := c.Sample(ctx, []string{name}, nil)
	if err != nil || len(smp.Locks) != 1 || smp.Locks[0].Kind != KindTokenLock {
		t.Fatalf("Sample = %+v, %v", smp, err)
	}
	if err := c.ForceUnlock(ctx, name, "someone-else"); !errors.Is(err, ErrHolderChanged) {
		t.Fatalf("force-unlock with another token = %v", err)
	}
	if err := c.ForceUnlock(ctx, name, "5f0c9a1e-token"); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, name).Val() != 0 || rdb.Exists(ctx, p+"cache:x").Val() != 1 {
		t.Fatal("wrong keys deleted")
	}

	// The store handle: lock, refuse a second token, compare-and-delete.
	a := c.NewTokenLock(name, &store.LockOptions{Lease: 10 * time.Second})
	b := c.NewTokenLock(name, &store.LockOptions{Lease: 10 * time.Second, RetryInterval: time.Millisecond, Attempts: 2})
	if err := a.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	var le *store.LockedError
	if err := b.TryLock(ctx); !errors.As(err, &le) || le.TTL <= 0 {
		t.Fatalf("second token = %v", err)
	}
	if err := b.Lock(ctx); !errors.As(err, &le) {
		t.Fatalf("Lock after its attempts = %v, want the last *store.LockedError", err)
	}
	if err := b.Unlock(ctx); !errors.Is(err, store.ErrNotHeld) || rdb.Get(ctx, name).Val() != a.HolderID() {
		t.Fatalf("unlock by another token = %v", err)
	}
	if err := b.Refresh(ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("refresh by another token = %v", err)
	}
	rdb.PExpire(ctx, name, time.Second)
	if err := a.Refresh(ctx); err != nil || rdb.PTTL(ctx, name).Val() <= time.Second {
		t.Fatalf("refresh = %v, pttl %v", err, rdb.PTTL(ctx, name).Val())
	}
	if err := a.Unlock(ctx); err != nil || rdb.Exists(ctx, name).Val() != 0 {
		t.Fatalf("unlock = %v", err)
	}
	if cnt := redistest.StatsTotal(t, rdb, redistest.StatsKey(name)); cnt.Acquired != 1 || cnt.Rejected != 3 {
		t.Errorf("stats = %+v, want 1 acquired 3 rejected", cnt)
	}
	// Lock bounded by ctx alone (Attempts 0) ends with store.ErrNotObtained and
	// ctx's error.
	if err := a.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	w := c.NewTokenLock(name, &store.LockOptions{RetryInterval: time.Millisecond})
	if err := w.Lock(cctx); !errors.Is(err, store.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with ctx over = %v", err)
	}
	var ve *store.ValidationError
	if err := c.NewTokenLock(name, &store.LockOptions{Lease: time.Microsecond}).TryLock(ctx); !errors.As(err, &ve) || ve.Field != "lease" {
		t.Fatalf("sub-ms lease = %v", err)
	}
}

// A spin lock (store.NewSpinLock): same layout as the reentrant lock, renewed while held.
func TestKindSpinLock(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "spin"
	a := c.NewSpinLock(name, &store.LockOptions{Lease: 900 * time.Millisecond, RetryInterval: 10 * time.Millisecond})
	b := c.NewSpinLock(name, &store.LockOptions{Lease: 900 * time.Millisecond, RetryInterval: 10 * time.Millisecond})
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	var le *store.LockedError
	if err := b.TryLock(ctx); !errors.As(err, &le) || le.TTL <= 0 {
		t.Fatalf("second holder TryLock = %v, want a *store.LockedError", err)
	}
	if err := b.Unlock(ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("unlock by a non-holder = %v, want store.ErrNotHeld", err)
	}
	// Renewed every 300 ms; the lease leaves a slow, loaded machine
	// (-race, parallel packages) room for a late renewal.
	redistest.WaitRenewed(t, rdb, name, 2)
	info, err := c.GetLock(ctx, name)
	if err != nil || info.Holders[0].ID != a.HolderID() {
		t.Fatalf("after 2 renewals: %+v, %v", info, err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Lock(ctx) }()
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiter did not get the lock: %v", err)
	}
	if err := b.Unlock(ctx); err != nil || rdb.Exists(ctx, name).Val() != 0 {
		t.Fatalf("final unlock = %v", err)
	}
}
