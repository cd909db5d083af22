package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// A release or renewal that comes after its hold ended is refused as it
// always was (ErrNotHeld), and the refusing script records it: the stats
// field and a message on the lock's late channel, naming the holder that
// has the lock now.

// lateListener subscribes to name's late channel before anything is late.
func lateListener(t *testing.T, ctx context.Context, rdb *redis.Client, name string) <-chan *redis.Message {
	t.Helper()
	ps := rdb.Subscribe(ctx, wire.LateChannel(name))
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	return ps.Channel()
}

// wantLate checks the stats field and the message of holder's late op.
func wantLate(t *testing.T, ctx context.Context, rdb *redis.Client, msgs <-chan *redis.Message, name, holder, op, next string) {
	t.Helper()
	v, err := rdb.HGet(ctx, wire.StatsKey(name), wire.LateField(holder)).Result()
	if err != nil {
		t.Fatalf("no late record of %s in the stats hash: %v", holder, err)
	}
	rec, ok := wire.ParseLateRecord(holder, v)
	if !ok || rec.Op != op || rec.Next != next || rec.AtMS <= 0 {
		t.Fatalf("late record %q = %+v, want op %s next %q", v, rec, op, next)
	}
	if next != "" && rec.NextSinceMS <= 0 {
		t.Fatalf("late record %q names no acquisition of the next holder", v)
	}
	select {
	case m := <-msgs:
		got, ok := wire.ParseLateMessage(m.Payload)
		if !ok || got != rec {
			t.Fatalf("late message %q = %+v, want %+v", m.Payload, got, rec)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no message on the late channel")
	}
}

func noLate(t *testing.T, ctx context.Context, rdb *redis.Client, name string) {
	t.Helper()
	fields, err := rdb.HKeys(ctx, wire.StatsKey(name)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if len(f) > len(wire.LateFieldPrefix) && f[:len(wire.LateFieldPrefix)] == wire.LateFieldPrefix {
			t.Fatalf("late record %s where nothing was late", f)
		}
	}
}

// expireNow ends name's lease at once, as Redis would when it runs out.
func expireNow(t *testing.T, ctx context.Context, rdb *redis.Client, name string) {
	t.Helper()
	if err := rdb.Del(ctx, name).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestLateReleaseIsRecordedWithTheNextHolder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owner string // "": a random owner, released with "last"
	}{{"last", ""}, {"counted", "shared-owner"}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, c, rdb, p := handleSetup(t)
			name := p + "late"
			msgs := lateListener(t, ctx, rdb, name)
			first := c.NewLock(name, &LockOptions{Owner: tc.owner, NoWatchdog: true, Lease: time.Minute})
			if err := first.TryLock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := first.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			noLate(t, ctx, rdb, name) // a release in time records nothing

			if err := first.TryLock(ctx); err != nil {
				t.Fatal(err)
			}
			expireNow(t, ctx, rdb, name)
			second := New(rdb, nil).NewLock(name, nil)
			if err := second.TryLock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := first.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("late Unlock = %v, want ErrNotHeld", err)
			}
			wantLate(t, ctx, rdb, msgs, name, first.HolderID(), "release", second.HolderID())
			// Nothing of the second holder's was touched.
			heldBySole(t, rdb, name, second.HolderID())
			if err := second.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLateReleaseOfAFreeLockIsRecorded(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "free"
	msgs := lateListener(t, ctx, rdb, name)
	l := c.NewLock(name, &LockOptions{Lease: time.Minute, NoWatchdog: true})
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	expireNow(t, ctx, rdb, name)
	if err := l.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("late Unlock = %v, want ErrNotHeld", err)
	}
	wantLate(t, ctx, rdb, msgs, name, l.HolderID(), "release", "")
	if n, _ := rdb.Exists(ctx, name).Result(); n != 0 {
		t.Fatal("the late release created the lock")
	}
}

func TestLateRenewalIsRecorded(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "renew"
	msgs := lateListener(t, ctx, rdb, name)
	l := c.NewLock(name, &LockOptions{Lease: time.Minute, NoWatchdog: true})
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(ctx); err != nil { // in time: nothing recorded
		t.Fatal(err)
	}
	noLate(t, ctx, rdb, name)
	expireNow(t, ctx, rdb, name)
	other := New(rdb, nil).NewLock(name, nil)
	if err := other.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("late Refresh = %v, want ErrNotHeld", err)
	}
	wantLate(t, ctx, rdb, msgs, name, l.HolderID(), "renew", other.HolderID())
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLateReleaseOfOtherKinds(t *testing.T) {
	t.Run("spin", func(t *testing.T) {
		ctx, c, rdb, p := handleSetup(t)
		name := p + "spin"
		msgs := lateListener(t, ctx, rdb, name)
		s := c.NewSpinLock(name, nil)
		if err := s.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		expireNow(t, ctx, rdb, name)
		if err := s.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
			t.Fatal(err)
		}
		wantLate(t, ctx, rdb, msgs, name, s.HolderID(), "release", "")
	})
	t.Run("fair", func(t *testing.T) {
		ctx, c, rdb, p := handleSetup(t)
		name := p + "fair"
		msgs := lateListener(t, ctx, rdb, name)
		f := c.NewFairLock(name, nil)
		if err := f.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		expireNow(t, ctx, rdb, name)
		other := New(rdb, nil).NewFairLock(name, nil)
		if err := other.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := f.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
			t.Fatal(err)
		}
		wantLate(t, ctx, rdb, msgs, name, f.HolderID(), "release", other.HolderID())
	})
	t.Run("token", func(t *testing.T) {
		ctx, c, rdb, p := handleSetup(t)
		name := p + "token"
		msgs := lateListener(t, ctx, rdb, name)
		tl := c.NewTokenLock(name, nil)
		if err := tl.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		expireNow(t, ctx, rdb, name)
		other := New(rdb, nil).NewTokenLock(name, nil)
		if err := other.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tl.Refresh(ctx); !errors.Is(err, ErrNotHeld) {
			t.Fatal(err)
		}
		wantLate(t, ctx, rdb, msgs, name, tl.HolderID(), "renew", other.HolderID())
		if err := tl.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
			t.Fatal(err)
		}
		wantLate(t, ctx, rdb, msgs, name, tl.HolderID(), "release", other.HolderID())
		if got, _ := rdb.Get(ctx, name).Result(); got != other.HolderID() {
			t.Fatalf("the late release touched the lock: %q", got)
		}
	})
}
