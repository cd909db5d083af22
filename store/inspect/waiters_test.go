package inspect

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// waitEnv is the console and two applications' store clients on the
// shared Redis (a Cluster under LOCKWARDEN_TEST_TOPOLOGY=cluster).
type waitEnv struct {
	insp *Inspector
	a, b *store.Client
}

func newWaitEnv(t *testing.T) waitEnv {
	t.Helper()
	a := store.New(redistest.Universal(t), &store.Options{App: "svc-a"})
	b := store.New(redistest.Universal(t), &store.Options{App: "svc-b"})
	t.Cleanup(func() { a.Close(); b.Close() })
	return waitEnv{insp: New(redistest.Universal(t), nil), a: a, b: b}
}

// registry waits until both clients registered and returns the registry.
func (e waitEnv) registry(t *testing.T) *Registry {
	t.Helper()
	var reg *Registry
	redistest.Eventually(t, "both clients registered", func() bool {
		r, err := readRegistry(t.Context(), e.insp)
		if err != nil {
			t.Fatal(err)
		}
		reg = r
		_, okA := r.Clients[e.a.ID()]
		_, okB := r.Clients[e.b.ID()]
		return okA && okB
	})
	return reg
}

// waiters reads the lock at name and returns it once it has n waiters.
func (e waitEnv) waiters(t *testing.T, name string, n int) *LockInfo {
	t.Helper()
	var l *LockInfo
	redistest.Eventually(t, fmt.Sprintf("%s has %d waiters", name, n), func() bool {
		got, err := e.insp.GetLock(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		l = got
		return len(got.Waiters) == n && got.WaitersTotal == int64(n)
	})
	return l
}

// lockAsync runs lk.Lock in a goroutine; its result arrives on the channel.
func lockAsync(ctx context.Context, lk *store.Lock) <-chan error {
	done := make(chan error, 1)
	go func() { done <- lk.Lock(ctx) }()
	return done
}

// A store waiter is read from the hand-off queue with the holder field it
// waits to take, its place, its arrival and its entry's deadline, and its
// identity comes from the registry; once handed the lock it is gone.
func TestStoreWaitersRead(t *testing.T) {
	e := newWaitEnv(t)
	ctx := t.Context()
	name := redistest.Prefix(t) + "queued"
	holder := e.a.NewLock(name, &store.LockOptions{Owner: "a"})
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	first := e.b.NewLock(name, &store.LockOptions{Owner: "b1"})
	firstDone := lockAsync(ctx, first)
	e.waiters(t, name, 1)
	second := e.b.NewLock(name, &store.LockOptions{Owner: "b2"})
	secondDone := lockAsync(ctx, second)
	l := e.waiters(t, name, 2)
	before := redistest.NowMS(t, e.insp.rdb)
	for i, owner := range []string{first.HolderID(), second.HolderID()} {
		w := l.Waiters[i]
		if w.Owner != owner || w.Position != i+1 {
			t.Errorf("waiter %d: owner %q at %d, want %q at %d", i, w.Owner, w.Position, owner, i+1)
		}
		if w.ArrivedMS <= 0 || w.ArrivedMS > before {
			t.Errorf("waiter %d arrived at %d, read at %d", i, w.ArrivedMS, before)
		}
		if w.RemainingMS <= 0 || w.Channel != wire.LockWakeChannel(name) {
			t.Errorf("waiter %d: %d ms left on %q, want a live entry on the hand-off channel", i, w.RemainingMS, w.Channel)
		}
	}
	if l.Waiters[0].ArrivedMS > l.Waiters[1].ArrivedMS {
		t.Errorf("the first waiter arrived after the second: %d > %d", l.Waiters[0].ArrivedMS, l.Waiters[1].ArrivedMS)
	}
	reg := e.registry(t)
	w := l.Waiters[0]
	AnnotateWaiter(reg, &w, time.UnixMilli(before))
	if w.Client == nil || w.Client.App != "svc-b" {
		t.Errorf("waiter identity %+v (%s), want svc-b", w.Client, w.Who)
	}
	if w.WaitingMS == nil || *w.WaitingMS != before-w.ArrivedMS {
		t.Errorf("waiting %v ms as of %d, want since its arrival at %d", w.WaitingMS, before, w.ArrivedMS)
	}

	// The client's places show among what it holds and waits for, and
	// releasing everything it holds leaves its live Lock calls queued.
	holds := ClientHolds([]LockInfo{*l})[e.b.ID()]
	if len(holds) != 2 || holds[0].What != "queued" || holds[0].Holder != first.HolderID() || holds[1].Place != 2 {
		t.Errorf("client holds %+v, want its two queued places", holds)
	}
	if out, err := e.insp.ReleaseAll(ctx, e.b.ID(), holds); err != nil || len(out) != 0 {
		t.Errorf("release all of a client that only waits: %+v, %v; want nothing done", out, err)
	}

	// The sampler's read of the lock shows the same queue.
	s, err := e.insp.Sample(ctx, []string{name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Locks) != 1 || s.Locks[0].WaitersTotal != 2 || len(s.Locks[0].Waiters) != 2 ||
		s.Locks[0].Waiters[1].Owner != second.HolderID() {
		t.Errorf("Sample reads %+v, want both waiters", s.Locks)
	}

	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-firstDone; err != nil {
		t.Fatalf("first waiter: %v", err)
	}
	l = e.waiters(t, name, 1)
	if l.Waiters[0].Owner != second.HolderID() || l.Waiters[0].Position != 1 {
		t.Errorf("after the hand-off the queue is %+v, want the second waiter first", l.Waiters)
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; err != nil {
		t.Fatalf("second waiter: %v", err)
	}
	e.waiters(t, name, 0)
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// spreadNames returns two lock names whose slots lie on different masters
// of the test Cluster (redisproc splits the slots in three even ranges);
// on one node they are just two names.
func spreadNames(t *testing.T) (string, string) {
	p := redistest.Prefix(t)
	var low, high string
	for i := 0; low == "" || high == ""; i++ {
		tag := fmt.Sprintf("dl%d", i)
		switch slot := wire.Slot(tag); {
		case slot < 5000 && low == "":
			low = p + "{" + tag + "}:L1"
		case slot > 11500 && high == "":
			high = p + "{" + tag + "}:L2"
		}
	}
	return low, high
}

// Two store clients in a real deadlock: A holds L1 and waits for L2, B
// holds L2 and waits for L1, each Lock in its own goroutine. The
// inspector's reads give the cycle with both holders' identities (on a
// Cluster, L1 and L2 sit on different masters); force-unlocking the
// youngest hold breaks it, and both Lock calls then return.
func TestRealDeadlockDetectedAndBroken(t *testing.T) {
	e := newWaitEnv(t)
	ctx := t.Context()
	l1, l2 := spreadNames(t)
	if c := redistest.SharedCluster(); c != nil {
		n1, _ := e.insp.rdb.(*redis.ClusterClient).MasterForKey(ctx, l1)
		n2, _ := e.insp.rdb.(*redis.ClusterClient).MasterForKey(ctx, l2)
		if n1 == nil || n2 == nil || n1.Options().Addr == n2.Options().Addr {
			t.Fatalf("%s and %s are not on two masters", l1, l2)
		}
	}
	aHolds, aWants := e.a.NewLock(l1, &store.LockOptions{Owner: "a"}), e.a.NewLock(l2, &store.LockOptions{Owner: "a"})
	bHolds, bWants := e.b.NewLock(l2, &store.LockOptions{Owner: "b"}), e.b.NewLock(l1, &store.LockOptions{Owner: "b"})
	if err := aHolds.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// B's hold is the younger one, so the suggestion is known: hold times
	// are in Redis milliseconds.
	taken := redistest.NowMS(t, e.insp.rdb)
	redistest.Eventually(t, "Redis time past A's acquisition", func() bool { return redistest.NowMS(t, e.insp.rdb) > taken })
	if err := bHolds.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	aDone, bDone := lockAsync(ctx, aWants), lockAsync(ctx, bWants)
	locks := []LockInfo{*e.waiters(t, l1, 1), *e.waiters(t, l2, 1)}
	found := Deadlocks(locks)
	if len(found) != 1 || len(found[0].Cycle) != 2 {
		t.Fatalf("deadlocks %+v, want one cycle of two steps", found)
	}
	d := found[0]
	AnnotateDeadlock(e.registry(t), &d)
	want := map[string]struct{ holder, waitsFor, app string }{
		l1: {aHolds.HolderID(), l2, "svc-a"},
		l2: {bHolds.HolderID(), l1, "svc-b"},
	}
	var youngest DeadlockStep
	for _, s := range d.Cycle {
		w := want[s.Lock]
		if s.Holder != w.holder || s.WaitsFor != w.waitsFor || s.Client == nil || s.Client.App != w.app {
			t.Errorf("step %+v (client %+v), want holder %s of %s waiting for %s", s, s.Client, w.app, s.Lock, w.waitsFor)
		}
		if s.Youngest {
			youngest = s
		}
	}
	if youngest.Lock != l2 {
		t.Fatalf("suggested breaking %q, want %q (B took it after A took %q)", youngest.Lock, l2, l1)
	}

	if err := e.insp.ForceUnlock(ctx, youngest.Lock, youngest.Holder); err != nil {
		t.Fatal(err)
	}
	// L2 goes to A, which then has both and lets go; B then gets L1.
	if err := <-aDone; err != nil {
		t.Fatalf("A's wait for %s: %v", l2, err)
	}
	for _, lk := range []*store.Lock{aWants, aHolds} {
		if err := lk.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-bDone; err != nil {
		t.Fatalf("B's wait for %s: %v", l1, err)
	}
	if err := bWants.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l1Now, err := e.insp.GetLock(ctx, l1)
	if err == nil {
		t.Errorf("%s still held after both finished: %+v", l1, l1Now)
	}
}

// The sharded subscriptions cover a fair lock's per-waiter channels but
// not store's hand-off channel, which is published with PUBLISH: its
// waiters coming and going must not rebuild them.
func TestLockChannelsLeaveOutHandOff(t *testing.T) {
	fair := LockInfo{Name: "f", Channel: wire.UnlockChannel("f"),
		Waiters: []Waiter{{ID: inspecttest.HolderUUID + ":7", Channel: wire.UnlockChannel("f") + ":" + inspecttest.HolderUUID + ":7"}}}
	queued := LockInfo{Name: "q", Channel: wire.UnlockChannel("q"),
		Waiters: []Waiter{{ID: "0123456789abcdef", Owner: inspecttest.HolderUUID + ":w", ArrivedMS: 1, Channel: wire.LockWakeChannel("q")}}}
	got := lockChannels([]LockInfo{fair, queued})
	for _, ch := range []string{wire.UnlockChannel("f"), fair.Waiters[0].Channel, wire.UnlockChannel("q")} {
		if _, ok := got[ch]; !ok {
			t.Errorf("%s not watched", ch)
		}
	}
	if _, ok := got[wire.LockWakeChannel("q")]; ok || len(got) != 3 {
		t.Errorf("watched %v: the hand-off channel is not a sharded one", got)
	}
}
