package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// handleSetup gives a test a client, a bounded context and a key prefix, and
// deletes every key holding the prefix afterwards, Redisson's side keys
// included (their names wrap it: "{<prefix>...}:...", "redisson_...:{...}").
func handleSetup(t *testing.T) (context.Context, *Client, *redis.Client, string) {
	t.Helper()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	c := New(rdb, nil)
	t.Cleanup(func() {
		bg := context.Background()
		iter := rdb.Scan(bg, 0, "*"+p+"*", 1000).Iterator()
		for iter.Next(bg) {
			rdb.Del(bg, iter.Val())
		}
	})
	return ctx, c, rdb, p
}

func rwLevelTTL(t *testing.T, rdb *redis.Client, name, holder string, level int64) time.Duration {
	t.Helper()
	return rdb.PTTL(context.Background(), wire.RWReadLevelKey(name, holder, level)).Val()
}

// Handles sharing an owner are one holder: their read levels add up, and
// each finds the right level key even though the other moved the count.
func TestRWSharedOwnerLevels(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	name := p + "rw"
	a := c.NewRWLock(name, &LockOptions{Owner: "worker-1"}).Reader()
	b := c.NewRWLock(name, &LockOptions{Owner: "worker-1"}).Reader()
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
		if left := rdb.Exists(ctx, wire.RWReadLevelKey(name, a.HolderID(), int64(3-i))).Val(); left != 0 {
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
	w := c.NewRWLock(name, nil).Writer()
	r := New(rdb, nil).NewRWLock(name, &LockOptions{RetryInterval: time.Minute}).Reader()
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
		rw := app.NewRWLock(name, &LockOptions{RetryInterval: 50 * time.Millisecond})
		write := i < 2
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 15 {
				side := rw.Reader()
				if write {
					side = rw.Writer()
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

// Keys that are not read-write locks are refused and left alone; bad
// options are refused before any I/O.
func TestRWWrongKindAndInvalid(t *testing.T) {
	ctx, c, rdb, p := handleSetup(t)
	rdb.Set(ctx, p+"str", "x", time.Minute)
	rdb.HSet(ctx, p+"hash", "user", "x")
	for _, name := range []string{p + "str", p + "hash"} {
		for _, s := range []*RWLockSide{c.NewRWLock(name, nil).Reader(), c.NewRWLock(name, nil).Writer()} {
			if err := s.TryLock(ctx); !errors.Is(err, ErrWrongKind) {
				t.Errorf("%s: %v, want ErrWrongKind", name, err)
			}
		}
	}
	if f := rdb.HGetAll(ctx, p+"hash").Val(); len(f) != 1 {
		t.Errorf("hash changed: %v", f)
	}
	if cnt := redistest.StatsTotal(t, rdb, wire.StatsKey(p+"str")); cnt.Errors != 2 {
		t.Errorf("stats = %+v, want 2 errors", cnt)
	}
	for _, rw := range []*RWLock{c.NewRWLock("", nil), c.NewRWLock(p+"x", &LockOptions{Owner: "t:write"}),
		c.NewRWLock(p+"x", &LockOptions{Lease: -1})} {
		if err := rw.Writer().Lock(ctx); !errors.Is(err, ErrInvalid) {
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
