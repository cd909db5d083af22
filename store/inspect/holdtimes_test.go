package inspect

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// holdCase is one lock kind driven through a store handle: take it, make
// its renewal happen (a watchdog tick or an explicit refresh), give it back.
type holdCase struct {
	take, release func(ctx context.Context) error
	holder        string
	// renew refreshes the lease; nil when a watchdog does it on its own.
	renew func(ctx context.Context) error
	// inHash says the record is a field of the lock's own hash
	// (wire.HoldField: the kinds in Redisson's RLock hash), not of the
	// hash beside it (wire.HeldKey).
	inHash bool
}

// recorded reports whether c's hold record is in Redis, and whether what
// keeps it expires.
func (c holdCase) recorded(ctx context.Context, rdb redis.Cmdable, name string) (found, expires bool) {
	if c.inHash {
		return rdb.HExists(ctx, name, wire.HoldField(c.holder)).Val(), rdb.PTTL(ctx, name).Val() > 0
	}
	return rdb.HExists(ctx, wire.HeldKey(name), c.holder).Val(), rdb.PTTL(ctx, wire.HeldKey(name)).Val() > 0
}

// Every lock kind lockwarden takes records its holders' hold times: the
// console shows HeldMS from the record (not from its own first sight), a
// renewal moves "renewed" and keeps "acquired", an unlock removes the
// holder's field, and so does a force-unlock.
func TestHoldTimesEveryKind(t *testing.T) {
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	app := store.New(rdb, &store.Options{NoRegistry: true})
	t.Cleanup(func() { _ = app.Close() })
	insp := New(redistest.UniversalFor(t, rdb), &Options{Patterns: ObjectPatterns{TokenLocks: []string{p + "token:*"}}})
	// Watchdogs renew every lease/3; the lease is short so a renewal
	// comes soon, and long enough that no hold runs out under load.
	const lease = 900 * time.Millisecond
	kinds := map[string]func(name string) holdCase{
		"reentrant": func(name string) holdCase {
			l := app.NewLock(name, &store.LockOptions{Lease: lease})
			return holdCase{take: l.TryLock, release: l.Unlock, holder: l.HolderID(), inHash: true}
		},
		"spin": func(name string) holdCase {
			s := app.NewSpinLock(name, &store.LockOptions{Lease: lease})
			return holdCase{take: s.TryLock, release: s.Unlock, holder: s.HolderID(), inHash: true}
		},
		"fair": func(name string) holdCase {
			f := app.NewFairLock(name, &store.LockOptions{Lease: lease})
			return holdCase{take: f.TryLock, release: f.Unlock, holder: f.HolderID(), inHash: true}
		},
		"fenced": func(name string) holdCase {
			f := app.NewFencedLock(name, &store.LockOptions{Lease: lease})
			return holdCase{take: f.TryLock, release: f.Unlock, holder: f.HolderID(), inHash: true}
		},
		"read": func(name string) holdCase {
			r := app.NewRWLock(name, &store.LockOptions{Lease: lease}).Reader()
			return holdCase{take: r.TryLock, release: r.Unlock, holder: r.HolderID()}
		},
		"write": func(name string) holdCase {
			w := app.NewRWLock(name, &store.LockOptions{Lease: lease}).Writer()
			return holdCase{take: w.TryLock, release: w.Unlock, holder: w.HolderID()}
		},
		"token": func(name string) holdCase {
			tl := app.NewTokenLock(name, &store.LockOptions{Lease: time.Minute})
			return holdCase{take: tl.TryLock, release: tl.Unlock, holder: tl.HolderID(), renew: tl.Refresh}
		},
	}
	for kind, mk := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := t.Context()
			name := p + "token:" + kind // only the token kind reads the pattern
			if kind != "token" {
				name = p + kind
			}
			t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name, wire.HeldKey(name)) })
			c := mk(name)
			if err := c.take(ctx); err != nil {
				t.Fatal(err)
			}
			first := heldBy(t, insp, name, c.holder)
			if first.AcquiredMS <= 0 || first.RenewedMS < first.AcquiredMS {
				t.Fatalf("after TryLock: %+v", first)
			}
			// The sampler's read (lists, live frames) finds the same record.
			smp, err := insp.Sample(ctx, []string{name}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(smp.Locks) != 1 || len(smp.Locks[0].Holders) != 1 || smp.Locks[0].Holders[0].AcquiredMS != first.AcquiredMS {
				t.Fatalf("sampled: %+v (detail %+v)", smp.Locks, first)
			}
			// The console's own first sight would say 1 s; the record says 3 s.
			annotated := first
			AnnotateHolder(nil, &annotated, time.UnixMilli(first.AcquiredMS+2000), time.UnixMilli(first.AcquiredMS+3000))
			if annotated.HeldMS != 3000 || annotated.HeldSinceSeen {
				t.Fatalf("annotated: %+v", annotated)
			}
			if found, expires := c.recorded(ctx, rdb, name); !found || !expires {
				t.Fatalf("hold record found %v, expiring %v: want it kept, expiring with the lock", found, expires)
			}

			renewed := first
			for i := 0; i < 200 && renewed.RenewedMS <= first.RenewedMS; i++ {
				time.Sleep(10 * time.Millisecond)
				if c.renew != nil {
					if err := c.renew(ctx); err != nil {
						t.Fatal(err)
					}
				}
				renewed = heldBy(t, insp, name, c.holder)
			}
			if renewed.RenewedMS <= first.RenewedMS || renewed.AcquiredMS != first.AcquiredMS {
				t.Fatalf("after renewals: %+v (first %+v)", renewed, first)
			}

			if err := c.release(ctx); err != nil {
				t.Fatal(err)
			}
			if found, _ := c.recorded(ctx, rdb, name); found {
				t.Fatal("hold time outlives the unlock")
			}

			if err := c.take(ctx); err != nil {
				t.Fatal(err)
			}
			if found, _ := c.recorded(ctx, rdb, name); !found {
				t.Fatal("no hold time after taking it again")
			}
			if err := insp.ForceUnlock(ctx, name, c.holder); err != nil {
				t.Fatal(err)
			}
			if found, _ := c.recorded(ctx, rdb, name); found {
				t.Fatal("hold time outlives the force-unlock")
			}
			_ = c.release(ctx) // stops the watchdog; the lock is gone already
		})
	}
}

// heldBy is the holder of name the console reads, failing when absent.
func heldBy(t *testing.T, insp *Inspector, name, holder string) Holder {
	t.Helper()
	info, err := insp.GetLock(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range info.Holders {
		if h.ID == holder {
			return h
		}
	}
	t.Fatalf("%s not among the holders of %s: %+v", holder, name, info.Holders)
	return Holder{}
}

// Read holders of a read-write lock have a record each: a re-entry keeps
// the first acquisition, one reader's unlock or force-unlock leaves the
// other's record alone, and the last release takes the hash with it.
func TestHoldTimesPerReadHolder(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	name := redistest.Prefix(t) + "rw"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name, wire.HeldKey(name)) })
	app := store.New(rdb, &store.Options{NoRegistry: true})
	t.Cleanup(func() { _ = app.Close() })
	insp := New(redistest.UniversalFor(t, rdb), nil)
	opts := &store.LockOptions{Lease: time.Minute, NoWatchdog: true}
	a := app.NewRWLock(name, opts).Reader()
	b := app.NewRWLock(name, opts).Reader()
	for _, r := range []*store.RWLockSide{a, b} {
		if err := r.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ha := heldBy(t, insp, name, a.HolderID())
	hb := heldBy(t, insp, name, b.HolderID())
	if ha.AcquiredMS <= 0 || hb.AcquiredMS <= 0 {
		t.Fatalf("records: %+v %+v", ha, hb)
	}
	time.Sleep(5 * time.Millisecond) // so the re-entry's Redis time differs
	if err := a.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	again := heldBy(t, insp, name, a.HolderID())
	if again.AcquiredMS != ha.AcquiredMS || again.RenewedMS <= ha.RenewedMS || again.Count != 2 {
		t.Fatalf("re-entry: %+v (first %+v)", again, ha)
	}
	if err := a.Unlock(ctx); err != nil { // one of two levels
		t.Fatal(err)
	}
	if !rdb.HExists(ctx, wire.HeldKey(name), a.HolderID()).Val() {
		t.Fatal("a's record gone while it still holds a level")
	}
	if err := insp.ForceUnlock(ctx, name, a.HolderID()); err != nil {
		t.Fatal(err)
	}
	fields := rdb.HKeys(ctx, wire.HeldKey(name)).Val()
	if len(fields) != 1 || fields[0] != b.HolderID() {
		t.Fatalf("after a's force-unlock the records are %q, want b's alone", fields)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, name, wire.HeldKey(name)).Val() != 0 {
		t.Fatal("the last release left the lock or its hold times")
	}
}

// A deadline lock's force-unlock deletes any record kept beside it.
func TestDeadlineForceUnlockDeletesHoldTimes(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	p := redistest.Prefix(t)
	insp := New(redistest.UniversalFor(t, rdb), &Options{Patterns: ObjectPatterns{DeadlineLocks: []string{p + "dl:*"}}})
	name := p + "dl:job"
	seen := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)
	rdb.Set(ctx, name, seen, 0)
	rdb.HSet(ctx, wire.HeldKey(name), seen, "1 1")
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name, wire.HeldKey(name)) })
	if err := insp.ForceUnlock(ctx, name, seen); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, wire.HeldKey(name)).Val() != 0 {
		t.Fatal("hold times outlive the deadline lock")
	}
}

// The console's force-unlock of a token lock announces the release, so a
// lockwarden waiter (retrying only every hour) takes it at once.
func TestTokenForceUnlockWakesWaiter(t *testing.T) {
	rdb := redistest.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	p := redistest.Prefix(t)
	name := p + "token:w"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name, wire.HeldKey(name)) })
	insp := New(redistest.UniversalFor(t, rdb), &Options{Patterns: ObjectPatterns{TokenLocks: []string{p + "token:*"}}})
	app := store.New(rdb, &store.Options{NoRegistry: true})
	t.Cleanup(func() { _ = app.Close() })
	stuck := app.NewTokenLock(name, &store.LockOptions{Lease: time.Minute})
	if err := stuck.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := app.NewTokenLock(name, &store.LockOptions{Lease: time.Minute, RetryInterval: time.Hour})
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	redistest.Eventually(t, "the waiter listens", func() bool {
		return rdb.PubSubNumSub(ctx, wire.TokenLockChannel(name)).Val()[wire.TokenLockChannel(name)] > 0
	})
	if err := insp.ForceUnlock(ctx, name, stuck.HolderID()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if err := waiter.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
