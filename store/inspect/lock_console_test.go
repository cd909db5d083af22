package inspect

import (
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

func TestLockForceUnlock(t *testing.T) {
	c, rdb := lockTestClient(t)
	ctx := redistest.Context(t, 30*time.Second)

	t.Run("released", func(t *testing.T) {
		name := redistest.Prefix(t) + "lock"
		l := c.NewLock(name, &store.LockOptions{Lease: 20 * time.Second, NoWatchdog: true})
		for i := 0; i < 3; i++ { // every reentry level goes at once
			if err := l.TryLock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		sub := rdb.Subscribe(ctx, wire.UnlockChannel(name))
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.ForceUnlock(ctx, name, l.HolderID()); err != nil {
			t.Fatal(err)
		}
		if rdb.Exists(ctx, name).Val() != 0 {
			t.Fatal("lock key survived ForceUnlock")
		}
		msg, err := redistest.ReceiveMessage(sub, 5*time.Second)
		if err != nil {
			t.Fatalf("no unlock message: %v", err)
		}
		if msg.Payload != "0" {
			t.Fatalf("force unlock published %q, want \"0\"", msg.Payload)
		}
		if err := l.Unlock(ctx); !errors.Is(err, store.ErrNotHeld) {
			t.Fatalf("former holder's Unlock = %v, want store.ErrNotHeld", err)
		}
	})

	t.Run("gone", func(t *testing.T) {
		name := redistest.Prefix(t) + "lock"
		if err := c.ForceUnlock(ctx, name, "x:1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("ForceUnlock of a missing key = %v, want ErrNotFound", err)
		}
		if rdb.Exists(ctx, name).Val() != 0 {
			t.Fatal("ForceUnlock created a key")
		}
	})

	t.Run("changed hands", func(t *testing.T) {
		name := redistest.Prefix(t) + "lock"
		l := c.NewLock(name, &store.LockOptions{Lease: 20 * time.Second, NoWatchdog: true})
		if err := l.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		before := rdb.HGetAll(ctx, name).Val()
		pttlBefore := rdb.PTTL(ctx, name).Val()
		err := c.ForceUnlock(ctx, name, "the-one-the-admin-saw:7")
		if !errors.Is(err, ErrHolderChanged) {
			t.Fatalf("ForceUnlock naming a former holder = %v, want ErrHolderChanged", err)
		}
		if after := rdb.HGetAll(ctx, name).Val(); !maps.Equal(after, before) {
			t.Fatalf("hash changed: %v -> %v", before, after)
		}
		if pttl := rdb.PTTL(ctx, name).Val(); pttl <= 0 || pttl > pttlBefore {
			t.Fatalf("lease changed: %v -> %v", pttlBefore, pttl)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("real holder could not unlock: %v", err)
		}
	})

	t.Run("wrong type", func(t *testing.T) {
		name := redistest.Prefix(t) + "lock"
		rdb.Set(ctx, name, "application data", time.Minute)
		if err := c.ForceUnlock(ctx, name, "x:1"); !errors.Is(err, store.ErrWrongKind) {
			t.Fatalf("ForceUnlock of a string = %v, want store.ErrWrongKind", err)
		}
		if v := rdb.Get(ctx, name).Val(); v != "application data" {
			t.Fatalf("string changed to %q", v)
		}
		if pttl := rdb.PTTL(ctx, name).Val(); pttl <= 0 {
			t.Fatalf("string's expiry changed: PTTL %v", pttl)
		}
	})
}

func TestLockForceReleaseCodes(t *testing.T) {
	for code, want := range map[int64]error{0: ErrNotFound, -1: ErrHolderChanged, -2: store.ErrWrongKind} {
		if err := forceReleaseErr("n", "h", code); !errors.Is(err, want) {
			t.Errorf("code %d -> %v, want %v", code, err, want)
		}
	}
	if err := forceReleaseErr("n", "h", 1); err != nil {
		t.Errorf("code 1 -> %v, want nil", err)
	}
	if err := forceReleaseErr("n", "h", 42); err == nil {
		t.Error("unknown code mapped to success")
	}
}

// GetLock relies on parseLock (classify.go); this test checks the contract
// between the two.
func TestLockGetLock(t *testing.T) {
	c, rdb := lockTestClient(t)
	ctx := redistest.Context(t, 30*time.Second)
	prefix := redistest.Prefix(t)

	name := prefix + "held"
	l := c.NewLock(name, &store.LockOptions{Lease: 20 * time.Second})
	redistest.UnlockAtEnd(t, l)
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := c.GetLock(ctx, name)
	if err != nil {
		t.Fatalf("GetLock of a held lock: %v", err)
	}
	if info.Name != name || info.Kind != KindReentrant {
		t.Errorf("info = %+v, want name %q kind %q", info, name, KindReentrant)
	}
	if len(info.Holders) != 1 || info.Holders[0].ID != l.HolderID() || info.Holders[0].Count != 2 || info.Holders[0].AcquiredMS <= 0 {
		t.Errorf("holders = %+v, want [{%s 2}]", info.Holders, l.HolderID())
	}
	if info.PTTL <= 0 || info.PTTL > 20*time.Second {
		t.Errorf("PTTL = %v, want (0, 20s]", info.PTTL)
	}

	if _, err := c.GetLock(ctx, prefix+"missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetLock of a missing key = %v, want ErrNotFound", err)
	}
	rdb.Set(ctx, prefix+"string", "v", 0)
	if _, err := c.GetLock(ctx, prefix+"string"); !errors.Is(err, store.ErrWrongKind) {
		t.Errorf("GetLock of a string = %v, want store.ErrWrongKind", err)
	}
	rdb.HSet(ctx, prefix+"app", "name", "alice", "age", "42")
	if _, err := c.GetLock(ctx, prefix+"app"); !errors.Is(err, store.ErrWrongKind) {
		t.Errorf("GetLock of an application hash = %v, want store.ErrWrongKind", err)
	}
}

func TestLockConsoleValidationSendsNothing(t *testing.T) {
	// Nothing listens here: a command sent would fail to dial instead.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c := New(redistest.UniversalFor(t, rdb), nil)
	ctx := redistest.Context(t, 10*time.Second)
	long := strings.Repeat("x", store.MaxNameLen+1)

	for _, tc := range []struct{ name, holder, field string }{
		{"", "a:1", "name"}, {long, "a:1", "name"}, {"ok", "", "holder"}, {"ok", long, "holder"},
	} {
		err := c.ForceUnlock(ctx, tc.name, tc.holder)
		var ve *store.ValidationError
		if !errors.As(err, &ve) || ve.Field != tc.field {
			t.Errorf("ForceUnlock(len %d, len %d) = %v, want a validation error on %q", len(tc.name), len(tc.holder), err, tc.field)
		}
	}
	if _, err := c.GetLock(ctx, ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("GetLock(\"\") = %v, want store.ErrInvalid", err)
	}
	if _, err := c.GetLock(ctx, "ok"); err == nil || errors.Is(err, store.ErrInvalid) {
		t.Fatalf("valid GetLock against a closed port = %v, want a connection error", err)
	}
}

// A read holder with many levels: the plan names the first few level keys
// and counts the rest, and says so.
func TestForceUnlockPlanCountsUnlistedLevels(t *testing.T) {
	const holder = "3f2a6c1e-8b4d-4e2f-9a1b-0c5d7e9f1a2b:7"
	for _, tc := range []struct {
		count       int64
		others      int
		listed      int
		more        int64
		sayAndMore  bool
		deletesName bool
	}{
		{count: 2, listed: 2, deletesName: true},
		{count: 3, listed: 3, deletesName: true},
		{count: 5, listed: 3, more: 2, sayAndMore: true, deletesName: true},
		{count: 5, others: 1, listed: 3, more: 2, sayAndMore: true},
	} {
		l := &LockInfo{Name: "rw", Kind: KindRWLock, Mode: "read",
			Holders: []Holder{{ID: holder, Count: tc.count, Mode: "read"}}}
		for i := range tc.others {
			l.Holders = append(l.Holders, Holder{ID: holder + strconv.Itoa(i), Count: 1, Mode: "read"})
		}
		p := l.ForceUnlockPlan(holder)
		levels := p.Deletes
		if tc.deletesName {
			if len(levels) == 0 || levels[0] != "rw" {
				t.Fatalf("count %d: deletes %v, want the lock first", tc.count, levels)
			}
			levels = levels[1:]
		}
		if len(levels) != tc.listed || p.DeletesMore != tc.more {
			t.Errorf("count %d, %d others: lists %d level keys and %d more, want %d and %d", tc.count, tc.others, len(levels), p.DeletesMore, tc.listed, tc.more)
		}
		if got := strings.Contains(p.Summary, strconv.FormatInt(tc.more, 10)+" more"); got != tc.sayAndMore {
			t.Errorf("count %d: summary %q; says \"and N more\": %v, want %v", tc.count, p.Summary, got, tc.sayAndMore)
		}
	}
}
