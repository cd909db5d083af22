package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// handleSetup is kindSetup plus the clean-up of Redisson's side keys, whose
// names wrap the test prefix ("{<prefix>...}:...", "redisson_...:{...}").
func handleSetup(t *testing.T) (context.Context, *Client, *redis.Client, string) {
	t.Helper()
	ctx, c, rdb, p := kindSetup(t)
	t.Cleanup(func() {
		bg := context.Background()
		iter := rdb.Scan(bg, 0, "*"+p+"*", 1000).Iterator()
		for iter.Next(bg) {
			rdb.Del(bg, iter.Val())
		}
	})
	return ctx, c, rdb, p
}

// eventually polls cond every 10 ms for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting until %s", what)
}

func rwLevelTTL(t *testing.T, rdb *redis.Client, name, holder string, level int64) time.Duration {
	t.Helper()
	return rdb.PTTL(context.Background(), RWReadLevelKey(name, holder, level)).Val()
}

// Readers share, a writer excludes them and they it; releases publish what
// Redisson's waiters expect, and the console sees exactly what was written.
func TestRWReadersShareWriterExcludes(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "rw"
	apps := []*Client{New(rdb, nil), New(rdb, nil), New(rdb, nil)}
	r1, r2 := apps[0].NewRWLock(name, nil).RLock(), apps[1].NewRWLock(name, nil).RLock()
	w := apps[2].NewRWLock(name, nil).WLock()
	if err := r1.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r2.TryLock(ctx); err != nil {
		t.Fatalf("second reader: %v", err)
	}
	var le *LockedError
	if err := w.TryLock(ctx); !errors.As(err, &le) || !errors.Is(err, ErrNotObtained) || le.TTL <= 0 {
		t.Fatalf("writer while readers hold = %v, want a LockedError with the lease", err)
	}
	f := rdb.HGetAll(ctx, name).Val()
	if len(f) != 3 || f["mode"] != "read" || f[r1.HolderID()] != "1" || f[r2.HolderID()] != "1" {
		t.Fatalf("hash = %v", f)
	}
	for _, r := range []*RWLockSide{r1, r2} {
		if ttl := rwLevelTTL(t, rdb, name, r.HolderID(), 1); ttl <= 0 || ttl > DefaultLockLease {
			t.Fatalf("level key of %s PTTL %v", r.HolderID(), ttl)
		}
	}

	d, err := c.Discover(ctx, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != 1 {
		t.Fatalf("Discover = %+v", d.Locks)
	}
	l := d.Locks[0]
	if l.Kind != KindRWLock || l.Mode != "read" || len(l.Holders) != 2 || l.Channel != RWLockChannel(name) {
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
	if rdb.Exists(ctx, RWReadLevelKey(name, r1.HolderID(), 1)).Val() != 0 {
		t.Fatal("released level key survived")
	}
	if err := r2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := kindMessages(ps, time.Second)
	if len(msgs) != 1 || msgs[0].Channel != RWLockChannel(name) || msgs[0].Payload != "0" || rdb.Exists(ctx, name).Val() != 0 {
		t.Fatalf("last reader: messages %v, lock exists %d", msgs, rdb.Exists(ctx, name).Val())
	}

	if err := w.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r1.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("reader while a writer holds = %v", err)
	}
	if err := apps[0].NewRWLock(name, nil).WLock().TryLock(ctx); !errors.Is(err, ErrNotObtained) {
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
	if err := w.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock of a free lock = %v, want ErrNotHeld", err)
	}
	if cnt := statsRecentSum(t, rdb, name); cnt.Acquired != 3 || cnt.Rejected != 3 {
		t.Errorf("stats = %+v, want 3 acquired and 3 rejected", cnt)
	}
}

// Both sides re-enter; the writer's owner may read, and its read levels
// outlive the write levels, turning the lock into a read lock.
func TestRWReentrancyAndDowngrade(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "rw"
	rw := c.NewRWLock(name, nil)
	w, r := rw.WLock(), rw.RLock()
	other := New(rdb, nil).NewRWLock(name, nil).RLock()
	for range 2 {
		if err := w.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.TryLock(ctx); err != nil {
		t.Fatalf("the writer's own read: %v", err)
	}
	if err := other.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
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
	if rdb.Exists(ctx, RWReadLevelKey(name, r.HolderID(), 2)).Val() != 0 || rdb.Exists(ctx, RWReadLevelKey(name, r.HolderID(), 1)).Val() != 1 {
		t.Fatal("releasing a read level must delete the top level key only")
	}
	for _, s := range []*RWLockSide{r, other} {
		if err := s.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("lock survived its readers")
	}
}

// Handles sharing an owner are one holder: their read levels add up, and
// each finds the right level key even though the other moved the count.
func TestRWSharedOwnerLevels(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "rw"
	a := c.NewRWLock(name, &LockOptions{Owner: "worker-1"}).RLock()
	b := c.NewRWLock(name, &LockOptions{Owner: "worker-1"}).RLock()
	for _, s := range []*RWLockSide{a, b, a} {
		if err := s.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := rdb.HGet(ctx, name, a.HolderID()).Val(); n != "3" {
		t.Fatalf("count %s, want 3", n)
	}
	for lv := int64(1); lv <= 3; lv++ {
		if rwLevelTTL(t, rdb, name, a.HolderID(), lv) <= 0 {
			t.Fatalf("level %d has no lease key", lv)
		}
	}
	for i, s := range []*RWLockSide{b, b, a} {
		if err := s.Unlock(ctx); err != nil {
			t.Fatalf("unlock %d: %v", i, err)
		}
		if left := rdb.Exists(ctx, RWReadLevelKey(name, a.HolderID(), int64(3-i))).Val(); left != 0 {
			t.Fatalf("unlock %d left level %d", i, 3-i)
		}
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("lock survived")
	}
}

// Lock waits for the other side and gets it on the release message; a
// waiter whose ctx ends gives up with ErrNotObtained.
func TestRWLockWaits(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "rw"
	w := c.NewRWLock(name, nil).WLock()
	r := New(rdb, nil).NewRWLock(name, &LockOptions{RetryCap: time.Minute}).RLock()
	if err := w.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Lock(ctx) }()
	select {
	case err := <-done:
		t.Fatalf("reader got in under a writer: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The retry cap is a minute and the lease 30 s: only the message can
	// wake the reader this early.
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reader not woken by the writer's release")
	}
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	if err := w.Lock(short); !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("writer under a reader = %v", err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Readers and writers hammering one lock never overlap wrongly.
func TestRWMutualExclusion(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "rw"
	var readers, writers, bad atomic.Int64
	var wg sync.WaitGroup
	for i := range 6 {
		app := c
		if i%2 == 1 {
			app = New(rdb, nil)
		}
		rw := app.NewRWLock(name, &LockOptions{RetryCap: 50 * time.Millisecond})
		write := i < 2
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 15 {
				side := rw.RLock()
				if write {
					side = rw.WLock()
				}
				if err := side.Lock(ctx); err != nil {
					t.Error(err)
					return
				}
				if write {
					if writers.Add(1) != 1 || readers.Load() != 0 {
						bad.Add(1)
					}
				} else if readers.Add(1); writers.Load() != 0 {
					bad.Add(1)
				}
				time.Sleep(time.Millisecond)
				if write {
					writers.Add(-1)
				} else {
					readers.Add(-1)
				}
				if err := side.Unlock(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d overlaps of a writer with anyone", bad.Load())
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("lock left behind")
	}
}

// The watchdog keeps the lock and the read level keys alive past the lease
// and stops once the console force-unlocks the holder.
func TestRWWatchdogAndForceUnlock(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "rw"
	rw := c.NewRWLock(name, &LockOptions{Lease: 300 * time.Millisecond})
	r := rw.RLock()
	other := New(rdb, nil).NewRWLock(name, &LockOptions{Lease: 300 * time.Millisecond}).RLock()
	for _, s := range []*RWLockSide{r, r, other} {
		if err := s.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // over three leases: only renewals keep it
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
	eventually(t, "the watchdog notices the lost hold", func() bool { return !rw.Renewing() })
	if err := r.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("unlock after force-unlock = %v, want ErrNotHeld", err)
	}
	if f := rdb.HGetAll(ctx, name).Val(); len(f) != 2 || f[other.HolderID()] != "1" {
		t.Fatalf("the other reader was touched: %v", f)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Keys that are not read-write locks are refused and left alone; bad
// options are refused before any I/O.
func TestRWWrongKindAndInvalid(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	rdb.Set(ctx, p+"str", "x", time.Minute)
	rdb.HSet(ctx, p+"hash", "user", "x")
	for _, name := range []string{p + "str", p + "hash"} {
		for _, s := range []*RWLockSide{c.NewRWLock(name, nil).RLock(), c.NewRWLock(name, nil).WLock()} {
			if err := s.TryLock(ctx); !errors.Is(err, ErrWrongKind) {
				t.Errorf("%s: %v, want ErrWrongKind", name, err)
			}
		}
	}
	if f := rdb.HGetAll(ctx, p+"hash").Val(); len(f) != 1 {
		t.Errorf("hash changed: %v", f)
	}
	if cnt := statsRecentSum(t, rdb, p+"str"); cnt.Errors != 2 {
		t.Errorf("stats = %+v, want 2 errors", cnt)
	}
	for _, rw := range []*RWLock{c.NewRWLock("", nil), c.NewRWLock(p+"x", &LockOptions{Owner: "t:write"}),
		c.NewRWLock(p+"x", &LockOptions{Lease: -1})} {
		if err := rw.WLock().Lock(ctx); !errors.Is(err, ErrInvalid) {
			t.Errorf("invalid handle: %v", err)
		}
	}
}

// On a Cluster, names whose Redisson side keys would land in another slot
// are refused before any I/O; names with a real hash tag are fine. The
// cluster client here never connects.
func TestRWClusterSlotCheck(t *testing.T) {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { cc.Close() })
	c := New(cc, nil)
	for name, ok := range map[string]bool{"plain": true, "a{tag}b": true, "a{}b": false, "a{b": false} {
		errs := map[string]error{
			"rwlock": c.NewRWLock(name, nil).err,
			"fair":   c.NewFairLock(name, nil).err,
			"fenced": c.NewFencedLock(name, nil).err,
		}
		for kind, err := range errs {
			if ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
				t.Errorf("%s %q on a Cluster: %v", kind, name, err)
			}
		}
	}
	// A single node takes any name, as Redisson does.
	if err := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), nil).NewRWLock("a{}b", nil).err; err != nil {
		t.Errorf("single node: %v", err)
	}
}
