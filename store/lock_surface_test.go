package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// lockHandle is what every lock kind answers (an RWLock through its sides).
type lockHandle interface {
	Name() string
	HolderID() string
	TryLock(ctx context.Context) error
	Lock(ctx context.Context) error
	Unlock(ctx context.Context) error
	Refresh(ctx context.Context) error
}

var (
	_ lockHandle = (*Lock)(nil)
	_ lockHandle = (*SpinLock)(nil)
	_ lockHandle = (*RWLockSide)(nil)
	_ lockHandle = (*FairLock)(nil)
	_ lockHandle = (*FencedLock)(nil)
	_ lockHandle = (*TokenLock)(nil)
)

// lockKindsByName makes a handle of every kind from one LockOptions.
var lockKindsByName = []struct {
	kind string
	make func(c *Client, name string, opts *LockOptions) lockHandle
}{
	{"lock", func(c *Client, n string, o *LockOptions) lockHandle { return c.NewLock(n, o) }},
	{"spin", func(c *Client, n string, o *LockOptions) lockHandle { return c.NewSpinLock(n, o) }},
	{"rw-read", func(c *Client, n string, o *LockOptions) lockHandle { return c.NewRWLock(n, o).Reader() }},
	{"rw-write", func(c *Client, n string, o *LockOptions) lockHandle { return c.NewRWLock(n, o).Writer() }},
	{"fair", func(c *Client, n string, o *LockOptions) lockHandle { return c.NewFairLock(n, o) }},
	{"fenced", func(c *Client, n string, o *LockOptions) lockHandle { return c.NewFencedLock(n, o) }},
	{"token", func(c *Client, n string, o *LockOptions) lockHandle { return c.NewTokenLock(n, o) }},
}

// Refresh restarts a lease that is running down, on every kind, and says
// ErrNotHeld once the handle holds nothing, leaving the lock alone.
func TestRefreshEveryKind(t *testing.T) {
	c, rdb := lockTestClient(t)
	ctx := t.Context()
	p := redistest.Prefix(t)
	for _, k := range lockKindsByName {
		t.Run(k.kind, func(t *testing.T) {
			name := p + k.kind
			h := k.make(c, name, &LockOptions{Lease: time.Minute, NoWatchdog: true})
			if err := h.TryLock(ctx); err != nil {
				t.Fatal(err)
			}
			// The lease as if most of it had passed.
			if err := rdb.PExpire(ctx, name, 2*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if err := h.Refresh(ctx); err != nil {
				t.Fatalf("Refresh of a held lock = %v", err)
			}
			if ttl := rdb.PTTL(ctx, name).Val(); ttl < 30*time.Second {
				t.Fatalf("PTTL after Refresh = %v, want the 1m lease restarted", ttl)
			}
			other := k.make(c, name, nil)
			if err := other.Refresh(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("Refresh by another holder = %v, want ErrNotHeld", err)
			}
			if ttl := rdb.PTTL(ctx, name).Val(); ttl < 30*time.Second {
				t.Fatalf("PTTL after a refused Refresh = %v: the lock was touched", ttl)
			}
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := h.Refresh(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("Refresh after Unlock = %v, want ErrNotHeld", err)
			}
			if n := rdb.Exists(ctx, name).Val(); n != 0 {
				t.Fatalf("Refresh after Unlock left the key behind")
			}
		})
	}
}

// Refresh acts for the owner in ctx, as the other calls do.
func TestRefreshFollowsOwnerInContext(t *testing.T) {
	c, rdb := lockTestClient(t)
	p := redistest.Prefix(t)
	for _, k := range lockKindsByName {
		if k.kind == "token" {
			continue // held by its value, not an owner
		}
		t.Run(k.kind, func(t *testing.T) {
			name := p + k.kind
			ctx := WithOwner(t.Context(), "job-1")
			h := k.make(c, name, &LockOptions{Lease: time.Minute, NoWatchdog: true})
			if err := h.TryLock(ctx); err != nil {
				t.Fatal(err)
			}
			rdb.PExpire(ctx, name, 2*time.Second)
			if err := h.Refresh(t.Context()); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("Refresh without the owner = %v, want ErrNotHeld", err)
			}
			if err := h.Refresh(ctx); err != nil {
				t.Fatalf("Refresh with the owner = %v", err)
			}
			if ttl := rdb.PTTL(ctx, name).Val(); ttl < 30*time.Second {
				t.Fatalf("PTTL after Refresh = %v", ttl)
			}
			if err := h.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// HolderID is what Redis holds for the handle: the hash field of the hash
// kinds, the value of a token lock.
func TestHolderIDEveryKind(t *testing.T) {
	c, rdb := lockTestClient(t)
	ctx := t.Context()
	p := redistest.Prefix(t)
	for _, k := range lockKindsByName {
		t.Run(k.kind, func(t *testing.T) {
			name := p + k.kind
			h := k.make(c, name, &LockOptions{Owner: "w-7"})
			if err := h.TryLock(ctx); err != nil {
				t.Fatal(err)
			}
			defer h.Unlock(ctx)
			if k.kind == "token" {
				if got := rdb.Get(ctx, name).Val(); got != "w-7" || h.HolderID() != got {
					t.Fatalf("token lock holds %q, HolderID %q; want the Owner w-7", got, h.HolderID())
				}
				return
			}
			want := c.ID() + ":w-7"
			if k.kind == "rw-write" {
				want += ":write"
			}
			if h.HolderID() != want || !rdb.HExists(ctx, name, want).Val() {
				t.Fatalf("HolderID %q, fields %v; want %q held", h.HolderID(), rdb.HKeys(ctx, name).Val(), want)
			}
		})
	}
}

// The same invalid options are refused alike by every kind, before any
// call reaches Redis.
func TestLockOptionsValidatedAlike(t *testing.T) {
	c, rdb := lockTestClient(t)
	ctx := t.Context()
	p := redistest.Prefix(t)
	for _, tc := range []struct {
		field string
		opts  LockOptions
	}{
		{"lease", LockOptions{Lease: -time.Second}},
		{"lease", LockOptions{Lease: time.Microsecond}},
		{"retry interval", LockOptions{RetryInterval: -time.Second}},
		{"thread wait time", LockOptions{ThreadWaitTime: -time.Second}},
		{"attempts", LockOptions{Attempts: -1}},
		{"owner", LockOptions{Owner: strings.Repeat("x", 1<<10)}},
		{"token", LockOptions{Owner: "a", Token: "b"}},
	} {
		for _, k := range lockKindsByName {
			name := p + k.kind
			var ve *ValidationError
			if err := k.make(c, name, &tc.opts).TryLock(ctx); !errors.As(err, &ve) || ve.Field != tc.field {
				t.Errorf("%s with %+v: TryLock = %v, want a *ValidationError for %q", k.kind, tc.opts, err, tc.field)
			}
			if rdb.Exists(ctx, name).Val() != 0 {
				t.Fatalf("%s with %+v wrote %s", k.kind, tc.opts, name)
			}
		}
	}
}

// A spin lock made with NoWatchdog keeps its lease fixed: no renewal
// timer runs while it holds the lock.
func TestSpinLockNoWatchdog(t *testing.T) {
	c, rdb := lockTestClient(t)
	ctx := t.Context()
	name := redistest.Prefix(t) + "spin"
	s := c.NewSpinLock(name, &LockOptions{Lease: time.Minute, NoWatchdog: true})
	if err := s.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if s.renewing() {
		t.Fatal("a spin lock without watchdog renews its lease")
	}
	if err := s.TryLock(ctx); err != nil || s.levels() != 2 {
		t.Fatalf("re-entry = %v, levels %d; want 2", err, s.levels())
	}
	for range 2 {
		if err := s.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("the last Unlock left the lock")
	}
	w := c.NewSpinLock(name, &LockOptions{Lease: time.Minute})
	if err := w.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Unlock(ctx)
	if !w.renewing() {
		t.Fatal("a spin lock with its watchdog does not renew")
	}
}

// A token lock's Owner is its value; the deprecated Token field still
// sets it.
func TestTokenLockOwnerIsTheValue(t *testing.T) {
	c, rdb := lockTestClient(t)
	ctx := t.Context()
	name := redistest.Prefix(t) + "token"
	a := c.NewTokenLock(name, &LockOptions{Token: "shared-value"})
	if err := a.TryLock(ctx); err != nil || a.HolderID() != "shared-value" || rdb.Get(ctx, name).Val() != "shared-value" {
		t.Fatalf("TryLock with Token = %v, HolderID %q, value %q", err, a.HolderID(), rdb.Get(ctx, name).Val())
	}
	b := c.NewTokenLock(name, &LockOptions{Owner: a.HolderID()})
	if err := b.Unlock(ctx); err != nil {
		t.Fatalf("Unlock by a handle with the same Owner = %v", err)
	}
	random := c.NewTokenLock(name, nil)
	if len(random.HolderID()) != 22 || random.HolderID() == c.NewTokenLock(name, nil).HolderID() {
		t.Fatalf("default values %q: want 16 random bytes, base64", random.HolderID())
	}
}
