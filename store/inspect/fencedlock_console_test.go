package inspect

// These take a lock with the application client (package store) and check
// what the console reads of it or does to it.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// Every acquisition takes a larger token, re-entries included; a refused
// attempt takes none; releases and a force-unlock never reset it; the
// console shows the token and the holder.
func TestFencedTokenIncreases(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "fenced"
	a := c.NewFencedLock(name, nil)
	b := store.New(rdb, nil).NewFencedLock(name, nil)
	// An existing counter is continued (a missing one is seeded from TIME).
	rdb.Set(ctx, wire.FencingTokenKey(name), 0, 0)
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), wire.FencingTokenKey(name)) })
	if err := a.TryLock(ctx); err != nil || a.Token() != 1 {
		t.Fatalf("first acquire: token %d, %v", a.Token(), err)
	}
	if err := a.TryLock(ctx); err != nil || a.Token() != 2 {
		t.Fatalf("re-entry: token %d, %v", a.Token(), err)
	}
	var le *store.LockedError
	if err := b.TryLock(ctx); !errors.As(err, &le) || le.TTL <= 0 || b.Token() != 0 {
		t.Fatalf("second holder = %v, token %d", err, b.Token())
	}
	if cur, err := b.CurrentToken(ctx); err != nil || cur != 2 {
		t.Fatalf("CurrentToken = %d, %v; a refused attempt must not take a token", cur, err)
	}
	if v := rdb.HGet(ctx, name, a.HolderID()).Val(); v != "2" {
		t.Fatalf("reentry count %q", v)
	}
	d, err := discover(ctx, c.Inspector, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != 1 || d.Locks[0].Kind != KindFencedLock || d.Locks[0].FencingToken != 2 ||
		d.Locks[0].Holders[0].ID != a.HolderID() || d.Locks[0].Holders[0].Count != 2 {
		t.Fatalf("console sees %+v", d.Locks)
	}

	ps := kindSubscribe(t, ctx, rdb, "redisson_lock__channel:*")
	for range 2 {
		if err := a.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	msgs := kindMessages(ps, time.Second)
	if len(msgs) != 1 || msgs[0].Channel != wire.UnlockChannel(name) || msgs[0].Payload != "0" {
		t.Fatalf("release messages %v", msgs)
	}
	if rdb.Exists(ctx, name).Val() != 0 || rdb.Get(ctx, wire.FencingTokenKey(name)).Val() != "2" {
		t.Fatal("release must delete the lock and keep the token")
	}
	if err := b.TryLock(ctx); err != nil || b.Token() != 3 {
		t.Fatalf("next holder: token %d, %v", b.Token(), err)
	}

	// The console breaks b's hold: the token stays, the next is larger.
	info, err := c.GetLock(ctx, name)
	if err != nil || info.FencingToken != 3 {
		t.Fatalf("GetLock = %+v, %v", info, err)
	}
	if plan := info.ForceUnlockPlan(b.HolderID()); len(plan.Keeps) != 1 || plan.Keeps[0] != wire.FencingTokenKey(name) {
		t.Errorf("plan = %+v", plan)
	}
	if err := c.ForceUnlock(ctx, name, b.HolderID()); err != nil {
		t.Fatal(err)
	}
	if rdb.Get(ctx, wire.FencingTokenKey(name)).Val() != "3" {
		t.Fatal("force-unlock touched the token")
	}
	if err := b.Unlock(ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("unlock after force-unlock = %v", err)
	}
	if err := a.TryLock(ctx); err != nil || a.Token() != 4 {
		t.Fatalf("after force-unlock: token %d, %v", a.Token(), err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if cnt := redistest.StatsTotal(t, rdb, redistest.StatsKey(name)); cnt.Acquired != 4 || cnt.Rejected != 1 {
		t.Errorf("stats = %+v, want 4 acquired 1 rejected", cnt)
	}
}
