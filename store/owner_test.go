package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// Handles made without an Owner hold as the owner ctx names, across
// kinds: one actor's locks carry one holder id, which is what the console
// joins a waiter to its other holds by.
func TestWithOwnerIsOneActorAcrossHandlesAndKinds(t *testing.T) {
	rdb := redistest.Client(t)
	c := New(rdb, nil)
	p := redistest.Prefix(t)
	ctx := redistest.Context(t, 20*time.Second)
	actx := WithOwner(ctx, "order-42")
	want := c.ID() + ":order-42"

	a, b := c.NewLock(p+"lock", nil), c.NewLock(p+"lock", nil)
	if err := a.Lock(actx); err != nil {
		t.Fatal(err)
	}
	// Another handle of the same actor re-enters; the handle alone does not.
	if err := b.TryLock(actx); err != nil {
		t.Fatalf("same owner in ctx: %v", err)
	}
	if err := b.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("no owner in ctx: %v, want ErrNotObtained", err)
	}
	if n, _ := rdb.HGet(ctx, p+"lock", want).Int(); n != 2 {
		t.Fatalf("holder %q count %d, want 2", want, n)
	}
	// An explicit Owner wins over ctx.
	explicit := c.NewLock(p+"lock", &LockOptions{Owner: "other"})
	if err := explicit.TryLock(actx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("explicit owner: %v, want ErrNotObtained", err)
	}
	for _, l := range []*Lock{a, b} {
		if err := l.Unlock(actx); err != nil {
			t.Fatal(err)
		}
	}
	if n := rdb.Exists(ctx, p+"lock").Val(); n != 0 {
		t.Fatal("lock left after both levels were released")
	}

	spin := c.NewSpinLock(p+"spin", nil)
	rw := c.NewRWLock(p+"rw", nil)
	fair := c.NewFairLock(p+"fair", nil)
	fenced := c.NewFencedLock(p+"fenced", nil)
	takes := []struct {
		key, field string
		take       func() error
		release    func() error
	}{
		{p + "spin", want, func() error { return spin.TryLock(actx) }, func() error { return spin.Unlock(actx) }},
		{p + "rw", want + wire.RWWriteSuffix, func() error { return rw.Writer().Lock(actx) }, func() error { return rw.Writer().Unlock(actx) }},
		{p + "fair", want, func() error { return fair.Lock(actx) }, func() error { return fair.Unlock(actx) }},
		{p + "fenced", want, func() error { return fenced.TryLock(actx) }, func() error { return fenced.Unlock(actx) }},
	}
	for _, tk := range takes {
		if err := tk.take(); err != nil {
			t.Fatal(tk.key, err)
		}
		if !rdb.HExists(ctx, tk.key, tk.field).Val() {
			t.Fatalf("%s: no holder field %q: %v", tk.key, tk.field, rdb.HGetAll(ctx, tk.key).Val())
		}
		if err := tk.release(); err != nil {
			t.Fatal(tk.key, err)
		}
	}
}

// A spin waiter's poll entry carries the ctx owner, so its wait joins the
// owner's holds elsewhere.
func TestWithOwnerNamesPollWaiter(t *testing.T) {
	rdb := redistest.Client(t)
	c := New(rdb, nil)
	name := redistest.Prefix(t) + "spin"
	ctx := redistest.Context(t, 20*time.Second)
	holder := c.NewSpinLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := c.NewSpinLock(name, &LockOptions{RetryInterval: 5 * time.Millisecond})
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(WithOwner(ctx, "job-7")) }()
	redistest.Eventually(t, "the waiter shows", func() bool {
		w := readPollWaiters(t, rdb, name)
		return len(w) == 1 && w[0].holder == c.ID()+":job-7"
	})
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := waiter.Unlock(WithOwner(ctx, "job-7")); err != nil {
		t.Fatal(err)
	}
}

func TestWithOwnerTooLongIsInvalid(t *testing.T) {
	c := New(redistest.Client(t), nil)
	ctx := WithOwner(redistest.Context(t, 5*time.Second), strings.Repeat("x", MaxOwnerLen+1))
	if err := c.NewLock(redistest.Prefix(t)+"lock", nil).TryLock(ctx); !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	if _, ok := ownerFrom(WithOwner(ctx, "")); ok {
		t.Fatal("an empty owner counts as none")
	}
}
