package inspect

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

func TestRegistryDescribesHolders(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	app := store.New(rdb, &store.Options{App: "orders-api", Version: "v1", Beat: time.Hour})
	t.Cleanup(func() { _ = app.Close() })
	insp := New(redistest.UniversalFor(t, rdb), nil)
	name := redistest.Prefix(t) + "lock"
	l := app.NewLock(name, &store.LockOptions{Owner: "77"})
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.UnlockAtEnd(t, l)

	// The client's first beat runs in its own goroutine right after New.
	var reg *Registry
	for i := 0; i < 100; i++ {
		var err error
		if reg, err = readRegistry(ctx, insp); err != nil {
			t.Fatal(err)
		}
		if _, ok := reg.Clients[app.ID()]; ok {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ci, ok := reg.Lookup(l.HolderID())
	if !ok {
		t.Fatalf("client %s not in the registry", app.ID())
	}
	host, _ := os.Hostname()
	if ci.App != "orders-api" || ci.Host != host || ci.PID != os.Getpid() || ci.Version != "v1" || ci.Gone() {
		t.Fatalf("client = %+v", ci)
	}
	want := "orders-api on " + host + " (pid " + itoa(os.Getpid()) + "), owner 77"
	if got := DescribeHolder(reg, l.HolderID()); got != want {
		t.Fatalf("DescribeHolder = %q, want %q", got, want)
	}
	foreign := "03fb0b93-0000-4000-8000-000000000001:44"
	if got := DescribeHolder(reg, foreign); !strings.HasPrefix(got, "unregistered client 03fb0b93-0000-4000-8000-000000000001 (Redisson or other)") {
		t.Fatalf("foreign holder = %q", got)
	}
	if got := DescribeHolder(reg, "a-token"); got != "a-token" {
		t.Fatalf("token = %q", got)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	if reg, _ = readRegistry(ctx, insp); reg != nil {
		if _, ok := reg.Clients[app.ID()]; ok {
			t.Fatal("closed client still registered")
		}
	}
}

// A store client records its replica acknowledgement setting; the holder
// of a lock then shows whether its grants were confirmed by replicas.
func TestHolderShowsReplicaAcks(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	insp := New(redistest.UniversalFor(t, rdb), nil)
	for _, tc := range []struct {
		acks int
		want bool
	}{{0, true}, {-1, false}, {2, true}} {
		app := store.New(rdb, &store.Options{ReplicaAcks: tc.acks})
		t.Cleanup(func() { _ = app.Close() })
		var ci ClientInfo
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			reg, err := readRegistry(ctx, insp)
			if err != nil {
				t.Fatal(err)
			}
			var ok bool
			if ci, ok = reg.Clients[app.ID()]; ok || time.Now().After(deadline) {
				break
			}
		}
		if ci.ReplicaAcks == nil || *ci.ReplicaAcks != tc.acks {
			t.Fatalf("ReplicaAcks %d read back as %v", tc.acks, ci.ReplicaAcks)
		}
		h := Holder{ID: app.ID() + ":o"}
		AnnotateHolder(&Registry{Clients: map[string]ClientInfo{app.ID(): ci}}, &h, time.Time{}, time.Now())
		if h.Client == nil || h.Client.Acked == nil || *h.Client.Acked != tc.want {
			t.Errorf("ReplicaAcks %d: holder client %+v, want acked %v", tc.acks, h.Client, tc.want)
		}
	}
}

func TestReleaseAllIsHolderChecked(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	app := store.New(rdb, &store.Options{NoRegistry: true})
	other := store.New(rdb, &store.Options{NoRegistry: true})
	insp := New(redistest.UniversalFor(t, rdb), nil)
	p := redistest.Prefix(t)
	a := app.NewLock(p+"a", &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
	b := app.NewLock(p+"b", &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
	for _, l := range []*store.Lock{a, b} {
		if err := l.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		redistest.UnlockAtEnd(t, l)
	}
	var locks []LockInfo
	for _, n := range []string{p + "a", p + "b"} {
		l, err := insp.GetLock(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, *l)
	}
	holds := ClientHolds(locks)[app.ID()]
	if len(holds) != 2 || holds[0].Lock != p+"a" || holds[0].What != "holds" {
		t.Fatalf("holds = %+v", holds)
	}
	// b changes hands after the console looked: release-all must leave it.
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	ob := other.NewLock(p+"b", &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
	if err := ob.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.UnlockAtEnd(t, ob)

	res, err := insp.ReleaseAll(ctx, app.ID(), holds)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Err != nil || !errors.Is(res[1].Err, ErrHolderChanged) {
		t.Fatalf("results = %+v", res)
	}
	if n := rdb.Exists(ctx, p+"a").Val(); n != 0 {
		t.Fatal("a not released")
	}
	if got := rdb.HExists(ctx, p+"b", ob.HolderID()).Val(); !got {
		t.Fatal("b's new holder lost the lock")
	}
	if _, err := insp.ReleaseAll(ctx, "not-a-uuid", holds); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestHoldTimesRecordedByLockScripts(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	app := store.New(rdb, &store.Options{NoRegistry: true})
	insp := New(redistest.UniversalFor(t, rdb), nil)
	name := redistest.Prefix(t) + "held"
	l := app.NewLock(name, &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.UnlockAtEnd(t, l)
	info, err := insp.GetLock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	h := info.Holders[0]
	if h.AcquiredMS <= 0 || h.RenewedMS != h.AcquiredMS {
		t.Fatalf("after acquire: %+v", h)
	}
	// A field of the lock's own hash: the lock's expiry covers it.
	if !rdb.HExists(ctx, name, wire.HoldField(l.HolderID())).Val() {
		t.Fatal("no hold record in the lock's hash")
	}
	time.Sleep(5 * time.Millisecond) // so the renewal's Redis time differs
	if err := l.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	smp, err := insp.Sample(ctx, []string{name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := smp.Locks[0].Holders[0]
	if r.AcquiredMS != h.AcquiredMS || r.RenewedMS <= h.RenewedMS {
		t.Fatalf("after renew: %+v (before %+v)", r, h)
	}
	AnnotateHolder(nil, &r, time.Time{}, time.UnixMilli(r.AcquiredMS+3000))
	if r.HeldMS != 3000 || r.HeldSinceSeen {
		t.Fatalf("annotated: %+v", r)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, name, wire.HeldKey(name)).Val() != 0 {
		t.Fatal("hold times outlive the release")
	}
}

// dropWaiters removes only the named places of the named client and moves
// every later deadline one thread wait time earlier per place removed
// before it, as Redisson's own removal of a waiter does.
func TestDropWaitersShiftsLaterDeadlines(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	insp := New(redistest.UniversalFor(t, rdb), nil)
	name := redistest.Prefix(t) + "fair"
	const dead, other = "0badc0de-0000-4000-8000-00000000000a", "0badc0de-0000-4000-8000-00000000000b"
	queue := []string{dead + ":1", other + ":2", dead + ":3", other + ":4"}
	t.Cleanup(func() {
		rdb.Del(context.WithoutCancel(ctx), wire.FairLockQueueKey(name), wire.FairLockTimeoutKey(name))
	})
	const base, wait = int64(4_000_000_000_000), store.DefaultFairThreadWait / time.Millisecond
	for i, id := range queue {
		rdb.RPush(ctx, wire.FairLockQueueKey(name), id)
		rdb.ZAdd(ctx, wire.FairLockTimeoutKey(name), redis.Z{Score: float64(base + int64(i)*int64(wait)), Member: id})
	}
	// other's place is listed too, under dead's id: it must stay.
	removed, err := insp.dropWaiters(ctx, name, dead, []string{dead + ":3", dead + ":1", other + ":2"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(removed, " ") != dead+":1 "+dead+":3" {
		t.Fatalf("removed %q", removed)
	}
	if got := rdb.LRange(ctx, wire.FairLockQueueKey(name), 0, -1).Val(); strings.Join(got, " ") != other+":2 "+other+":4" {
		t.Fatalf("queue %q", got)
	}
	// other:2 was 1 wait behind base with one removal before it; other:4
	// was 3 waits behind with two before it.
	for id, want := range map[string]int64{other + ":2": base, other + ":4": base + int64(wait)} {
		if got := int64(rdb.ZScore(ctx, wire.FairLockTimeoutKey(name), id).Val()); got != want {
			t.Errorf("deadline of %s = %d, want %d", id, got, want)
		}
	}
	if n := rdb.ZCard(ctx, wire.FairLockTimeoutKey(name)).Val(); n != 2 {
		t.Errorf("%d deadlines left, want 2", n)
	}
	if again, err := insp.dropWaiters(ctx, name, dead, []string{dead + ":1"}); err != nil || len(again) != 0 {
		t.Fatalf("second drop: %q, %v", again, err)
	}
	if _, err := insp.dropWaiters(ctx, name, "not-a-uuid", []string{dead + ":1"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
}

// A crashed client's fair-queue place ahead of a live waiter: release-all
// removes it, so when the holder lets go the live waiter gets the lock at
// once instead of after the dead one's deadline (five minutes away).
func TestReleaseAllDropsCrashedWaiter(t *testing.T) {
	rdb := redistest.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	insp := New(redistest.UniversalFor(t, rdb), nil)
	name := redistest.Prefix(t) + "fair"
	t.Cleanup(func() {
		rdb.Del(context.WithoutCancel(ctx), name, wire.FairLockQueueKey(name), wire.FairLockTimeoutKey(name), wire.HeldKey(name))
	})
	app := store.New(rdb, &store.Options{NoRegistry: true})
	t.Cleanup(func() { _ = app.Close() })
	holder := app.NewFairLock(name, &store.LockOptions{Lease: time.Minute, NoWatchdog: true})
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	// The crashed client queued as a Redisson client does and never came
	// back: its deadline is the holder's lease plus the thread wait ahead.
	const dead = "0badc0de-0000-4000-8000-00000000000a"
	now := rdb.Time(ctx).Val()
	deadline := now.Add(time.Minute + store.DefaultFairThreadWait).UnixMilli()
	rdb.RPush(ctx, wire.FairLockQueueKey(name), dead+":1")
	rdb.ZAdd(ctx, wire.FairLockTimeoutKey(name), redis.Z{Score: float64(deadline), Member: dead + ":1"})

	live := app.NewFairLock(name, &store.LockOptions{Lease: time.Minute, NoWatchdog: true})
	done := make(chan error, 1)
	go func() { done <- live.Lock(ctx) }()
	redistest.Eventually(t, "the live waiter is queued", func() bool { return queueLen(rdb, name) == 2 })

	info, err := insp.GetLock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	holds := ClientHolds([]LockInfo{*info})[dead]
	if len(holds) != 1 || holds[0].What != "waits" || holds[0].Place != 1 {
		t.Fatalf("holds of the crashed client = %+v", holds)
	}
	res, err := insp.ReleaseAll(ctx, dead, holds)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Err != nil || res[0].What != "waits" || res[0].Holder != dead+":1" || res[0].Lock != name {
		t.Fatalf("results = %+v", res)
	}
	if got := rdb.LRange(ctx, wire.FairLockQueueKey(name), 0, -1).Val(); len(got) != 1 || got[0] != live.HolderID() {
		t.Fatalf("queue after release-all: %q", got)
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the live waiter did not get the lock: %v", err)
	}
	if err := live.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Nothing of the client is left: a second release-all finds no place.
	res, err = insp.ReleaseAll(ctx, dead, holds)
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, ErrHolderChanged) {
		t.Fatalf("second release-all: %+v, %v", res, err)
	}
}

// On a Cluster a sample dates each lock by its own master's clock
// (node_time.lua in that master's share of the pipeline); on one node the
// sample's TIME runs beside the reads and no per-lock time is kept.
func TestSampleDatesLocksByTheirMaster(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	app := store.New(rdb, &store.Options{NoRegistry: true})
	insp := New(redistest.UniversalFor(t, rdb), nil)
	p := redistest.Prefix(t)
	var names []string
	for i := range 12 { // hash tags spread over the slots, so over every master
		name := p + "{" + itoa(i) + "}"
		l := app.NewLock(name, &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
		if err := l.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		redistest.UnlockAtEnd(t, l)
		names = append(names, name)
	}
	smp, err := insp.Sample(ctx, names, nil)
	if err != nil {
		t.Fatal(err)
	}
	if redistest.SharedCluster() == nil {
		if smp.LockAt != nil {
			t.Fatalf("one node: per-lock times %v, want none", smp.LockAt)
		}
		return
	}
	if len(smp.LockAt) != len(names) {
		t.Errorf("per-lock times for %d of %d locks", len(smp.LockAt), len(names))
	}
	for _, n := range names {
		at, ok := smp.LockAt[n]
		if d := at.Sub(smp.At); !ok || d > 10*time.Second || d < -10*time.Second {
			t.Errorf("%s: its master's time %v (%v), the sample's %v", n, at, ok, smp.At)
		}
		if !smp.TimeOf(n).Equal(at) {
			t.Errorf("TimeOf(%s) = %v, want its master's %v", n, smp.TimeOf(n), at)
		}
	}
}
