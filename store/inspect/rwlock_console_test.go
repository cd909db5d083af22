package inspect

// These take a lock with the application client (package store) and check
// what the console reads of it or does to it.

import (
	"errors"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// Readers share, a writer excludes them and they it; releases publish what
// Redisson's waiters expect, and the console sees exactly what was written.
func TestRWReadersShareWriterExcludes(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "rw"
	apps := []*store.Client{store.New(rdb, nil), store.New(rdb, nil), store.New(rdb, nil)}
	r1, r2 := apps[0].NewRWLock(name, nil).Reader(), apps[1].NewRWLock(name, nil).Reader()
	w := apps[2].NewRWLock(name, nil).Writer()
	if err := r1.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r2.TryLock(ctx); err != nil {
		t.Fatalf("second reader: %v", err)
	}
	var le *store.LockedError
	if err := w.TryLock(ctx); !errors.As(err, &le) || !errors.Is(err, store.ErrNotObtained) || le.TTL <= 0 {
		t.Fatalf("writer while readers hold = %v, want a store.LockedError with the lease", err)
	}
	f := rdb.HGetAll(ctx, name).Val()
	if len(f) != 3 || f["mode"] != "read" || f[r1.HolderID()] != "1" || f[r2.HolderID()] != "1" {
		t.Fatalf("hash = %v", f)
	}
	for _, r := range []*store.RWLockSide{r1, r2} {
		if ttl := rwLevelTTL(t, rdb, name, r.HolderID(), 1); ttl <= 0 || ttl > store.DefaultLockLease {
			t.Fatalf("level key of %s PTTL %v", r.HolderID(), ttl)
		}
	}

	d, err := discover(ctx, c.Inspector, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != 1 {
		t.Fatalf("Discover = %+v", d.Locks)
	}
	l := d.Locks[0]
	if l.Kind != KindRWLock || l.Mode != "read" || len(l.Holders) != 2 || l.Channel != wire.RWLockChannel(name) {
		t.Fatalf("console sees %+v", l)
	}
	for _, h := range l.Holders {
		if h.Mode != "read" || h.Count != 1 || h.LeaseMS <= 0 || (h.ID != r1.HolderID() && h.ID != r2.HolderID()) {
			t.Fatalf("holder %+v", h)
		}
	}

	ps := kindSubscribe(t, ctx, rdb, "redisson_rwlock:*")
	if err := r1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if msgs := kindMessages(ps, 200*time.Millisecond); len(msgs) != 0 {
		t.Fatalf("published %v while a reader remains", msgs)
	}
	if rdb.Exists(ctx, wire.RWReadLevelKey(name, r1.HolderID(), 1)).Val() != 0 {
		t.Fatal("released level key survived")
	}
	if err := r2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := kindMessages(ps, time.Second)
	if len(msgs) != 1 || msgs[0].Channel != wire.RWLockChannel(name) || msgs[0].Payload != "0" || rdb.Exists(ctx, name).Val() != 0 {
		t.Fatalf("last reader: messages %v, lock exists %d", msgs, rdb.Exists(ctx, name).Val())
	}

	if err := w.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r1.TryLock(ctx); !errors.Is(err, store.ErrNotObtained) {
		t.Fatalf("reader while a writer holds = %v", err)
	}
	if err := apps[0].NewRWLock(name, nil).Writer().TryLock(ctx); !errors.Is(err, store.ErrNotObtained) {
		t.Fatalf("second writer = %v", err)
	}
	info, err := c.GetLock(ctx, name)
	if err != nil || info.Mode != "write" || len(info.Holders) != 1 || info.Holders[0].ID != w.HolderID() || info.Holders[0].Mode != "write" {
		t.Fatalf("GetLock = %+v, %v", info, err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	msgs = kindMessages(ps, time.Second)
	if len(msgs) != 1 || msgs[0].Payload != "1" || rdb.Exists(ctx, name).Val() != 0 {
		t.Fatalf("writer release: messages %v", msgs)
	}
	if err := w.Unlock(ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("unlock of a free lock = %v, want store.ErrNotHeld", err)
	}
	if cnt := redistest.StatsTotal(t, rdb, redistest.StatsKey(name)); cnt.Acquired != 3 || cnt.Rejected != 3 {
		t.Errorf("stats = %+v, want 3 acquired and 3 rejected", cnt)
	}
}

// Both sides re-enter; the writer's owner may read, and its read levels
// outlive the write levels, turning the lock into a read lock.
func TestRWReentrancyAndDowngrade(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "rw"
	rw := c.NewRWLock(name, nil)
	w, r := rw.Writer(), rw.Reader()
	other := store.New(rdb, nil).NewRWLock(name, nil).Reader()
	for range 2 {
		if err := w.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.TryLock(ctx); err != nil {
		t.Fatalf("the writer's own read: %v", err)
	}
	if err := other.TryLock(ctx); !errors.Is(err, store.ErrNotObtained) {
		t.Fatalf("another owner's read under a writer = %v", err)
	}
	f := rdb.HGetAll(ctx, name).Val()
	if f["mode"] != "write" || f[w.HolderID()] != "2" || f[r.HolderID()] != "1" {
		t.Fatalf("hash = %v", f)
	}
	info, err := c.GetLock(ctx, name)
	if err != nil || info.Kind != KindRWLock || len(info.Holders) != 2 || info.Holders[0].ID != w.HolderID() || info.Holders[0].Count != 2 {
		t.Fatalf("GetLock = %+v, %v", info, err)
	}

	ps := kindSubscribe(t, ctx, rdb, "redisson_rwlock:*")
	for range 2 {
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	f = rdb.HGetAll(ctx, name).Val()
	if len(f) != 2 || f["mode"] != "read" || f[r.HolderID()] != "1" {
		t.Fatalf("after the write levels: %v, want a read lock of the owner", f)
	}
	if msgs := kindMessages(ps, 200*time.Millisecond); len(msgs) != 0 {
		t.Fatalf("downgrade published %v", msgs)
	}
	if err := other.TryLock(ctx); err != nil {
		t.Fatalf("another reader after the downgrade: %v", err)
	}
	if err := r.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if ttl := rwLevelTTL(t, rdb, name, r.HolderID(), 2); ttl <= 0 {
		t.Fatal("second read level has no lease key")
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, wire.RWReadLevelKey(name, r.HolderID(), 2)).Val() != 0 || rdb.Exists(ctx, wire.RWReadLevelKey(name, r.HolderID(), 1)).Val() != 1 {
		t.Fatal("releasing a read level must delete the top level key only")
	}
	for _, s := range []*store.RWLockSide{r, other} {
		if err := s.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("lock survived its readers")
	}
}

// The watchdog keeps the lock and the read level keys alive past the lease
// and stops once the console force-unlocks the holder.
func TestRWWatchdogAndForceUnlock(t *testing.T) {
	ctx, c, rdb, p := kindSetup(t)
	name := p + "rw"
	rw := c.NewRWLock(name, &store.LockOptions{Lease: 900 * time.Millisecond})
	r := rw.Reader()
	other := store.New(rdb, nil).NewRWLock(name, &store.LockOptions{Lease: 900 * time.Millisecond}).Reader()
	for _, s := range []*store.RWLockSide{r, r, other} {
		if err := s.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	redistest.WaitRenewed(t, rdb, name, 2) // the watchdog renews the lock and its levels
	if rwLevelTTL(t, rdb, name, r.HolderID(), 1) <= 0 || rwLevelTTL(t, rdb, name, r.HolderID(), 2) <= 0 || rdb.PTTL(ctx, name).Val() <= 0 {
		t.Fatal("lock or read levels expired while held")
	}
	info, err := c.GetLock(ctx, name)
	if err != nil || len(info.Holders) != 2 {
		t.Fatalf("GetLock = %+v, %v", info, err)
	}
	if err := c.ForceUnlock(ctx, name, r.HolderID()); err != nil {
		t.Fatal(err)
	}
	if err := r.Unlock(ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("unlock after force-unlock = %v, want store.ErrNotHeld", err)
	}
	if f := rdb.HGetAll(ctx, name).Val(); len(f) != 2 || f[other.HolderID()] != "1" {
		t.Fatalf("the other reader was touched: %v", f)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
