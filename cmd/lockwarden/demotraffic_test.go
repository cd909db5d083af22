package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

func trafficClient(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: sharedRedis.Addr, PoolSize: 64})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestCmdTraffic(t *testing.T) {
	rdb := trafficClient(t)
	prefix := redistest.Prefix(t)
	cfg := trafficConfig{
		Prefix: prefix,
		// A lease far shorter than the period: each new "crashed" holder can
		// only get the lock if the previous one's lease really ran out.
		StuckLease: 300 * time.Millisecond,
		StuckEvery: 1500 * time.Millisecond,
	}
	var n trafficCounts
	// An existing token counter is continued (a missing one is seeded from
	// Redis TIME), so from 0 the key counts the holds.
	rdb.Set(context.Background(), redistest.FencingTokenKey(prefix+demoFenced), 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runTrafficCounted(ctx, rdb, cfg, &n) }()

	var err error
	select {
	case err = <-done:
	case <-time.After(4*time.Second + 3*time.Second):
		t.Fatal("traffic did not stop within 3 s after its context ended")
	}
	if err != nil {
		t.Fatalf("runTraffic: %v", err)
	}

	bg, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()

	// A token bucket as store/testdata/ratelimit_client.lua's clients configure it.
	fields, rerr := rdb.HGetAll(bg, prefix+demoAPI).Result()
	if rerr != nil {
		t.Fatal(rerr)
	}
	if fields["max_permits"] != "500" || fields["interval"] != "2" {
		t.Errorf("%s = %v, want max_permits 500 and interval 2", prefix+demoAPI, fields)
	}
	if n.apiAcquired.Load() == 0 || n.apiErrors.Load() != 0 {
		t.Errorf("api: acquired %d, errors %d; want some acquired and no errors", n.apiAcquired.Load(), n.apiErrors.Load())
	}
	// Every acquire is counted in the object's stats ring by the script
	// itself, which is what the console shows. A call in flight when ctx
	// ended may have run in Redis while its worker saw only the cancel, so
	// the ring may be ahead by at most one acquire per worker (20).
	if got := sumStats(t, rdb, prefix+demoAPI, "a"); got == 0 || got > n.apiAcquired.Load()+20 {
		t.Errorf("stats ring counts %d acquired, traffic saw %d; want 0 < ring <= traffic + 20 in flight", got, n.apiAcquired.Load())
	}
	if n.loginAcquired.Load()+n.loginRejected.Load() == 0 {
		t.Error("no acquire on the login bucket")
	}
	if n.lockTaken.Load() < int64(len(demoLocks)) {
		t.Errorf("locks taken %d times, want at least %d", n.lockTaken.Load(), len(demoLocks))
	}
	if got := n.stuckTaken.Load(); got < 2 {
		t.Errorf("stuck lock taken %d times, want >= 2 (its lease must run out between holders)", got)
	}
	// The Redisson families: shared reads and a write, a queue served in
	// turn, fencing tokens that only grow.
	if n.rwReads.Load() < 2 || n.rwWrites.Load() == 0 {
		t.Errorf("rwlock: %d reads, %d writes; want both", n.rwReads.Load(), n.rwWrites.Load())
	}
	if n.fairTaken.Load() < 2 {
		t.Errorf("fair lock taken %d times, want at least 2", n.fairTaken.Load())
	}
	if n.fencedTaken.Load() == 0 || n.fenceViolations.Load() != 0 {
		t.Errorf("fenced lock: %d holds, %d tokens not above the last", n.fencedTaken.Load(), n.fenceViolations.Load())
	}
	if tok, err := rdb.Get(bg, redistest.FencingTokenKey(prefix+demoFenced)).Int64(); err != nil || tok != n.fencedTaken.Load() {
		t.Errorf("fencing token %d (%v), want one per hold: %d", tok, err, n.fencedTaken.Load())
	}
	for _, k := range []string{prefix + demoRW, prefix + demoFair, prefix + demoFenced,
		redistest.FairLockQueueKey(prefix + demoFair), redistest.FairLockTimeoutKey(prefix + demoFair)} {
		if e, err := rdb.Exists(bg, k).Result(); err != nil || e != 0 {
			t.Errorf("%s still exists after the traffic stopped (%v)", k, err)
		}
	}
	if got := sumStats(t, rdb, prefix+demoFair, "a"); got == 0 {
		t.Error("the fair lock's acquisitions are not in its stats ring")
	}

	// Stopping the traffic releases every contended lock it held.
	for _, name := range demoLocks {
		if k, err := rdb.Exists(bg, prefix+name).Result(); err != nil || k != 0 {
			t.Errorf("%s still exists after the traffic stopped (%v)", prefix+name, err)
		}
	}
}

// The stuck lock is held with a fixed lease and no watchdog.
func TestCmdTrafficStuckLockExpires(t *testing.T) {
	rdb := trafficClient(t)
	name := redistest.Prefix(t) + demoStuck
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l := newDemoLock(store.New(rdb, nil), name, "crashed-1", 400*time.Millisecond)
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	pttl, err := rdb.PTTL(ctx, name).Result()
	if err != nil || pttl <= 0 || pttl > 400*time.Millisecond {
		t.Fatalf("PTTL %v (%v), want in (0, 400ms]", pttl, err)
	}
	for i := 0; i < 50; i++ { // bounded: 50 x 100 ms
		if k, err := rdb.Exists(ctx, name).Result(); err == nil && k == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the stuck lock was still there 5 s after its 400 ms lease: something renews it")
}

func TestCmdTrafficSetupFails(t *testing.T) {
	rdb := trafficClient(t)
	prefix := redistest.Prefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// An application's own value where the demo bucket would go.
	if err := rdb.Set(ctx, prefix+demoAPI, "not a bucket", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	err := runTraffic(ctx, rdb, trafficConfig{Prefix: prefix})
	if !errors.Is(err, store.ErrWrongKind) {
		t.Fatalf("runTraffic = %v, want ErrWrongKind", err)
	}
	if ctx.Err() != nil {
		t.Fatal("runTraffic ran until its context ended instead of failing at set-up")
	}
	if v, _ := rdb.Get(ctx, prefix+demoAPI).Result(); v != "not a bucket" {
		t.Errorf("the existing key was changed to %q", v)
	}
}

// sumStats adds the fields of one kind ("a", "r" or "e") over the name's
// stats ring (layout in store/internal/wire/wire.go).
func sumStats(t *testing.T, rdb *redis.Client, name, kind string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fields, err := rdb.HGetAll(ctx, redistest.StatsKey(name)).Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for k, v := range fields {
		if rest, ok := strings.CutPrefix(k, kind); ok {
			if _, err := strconv.Atoi(rest); err == nil {
				n, _ := strconv.ParseInt(v, 10, 64)
				sum += n
			}
		}
	}
	return sum
}

// While the demo runs the console lists every Redisson lock family it
// drives: the read-write lock, the fair lock with its queue, the fenced
// lock with its token.
func TestCmdTrafficRedissonFamiliesListed(t *testing.T) {
	rdb := trafficClient(t)
	prefix := redistest.Prefix(t)
	ctx, cancel := context.WithCancel(context.Background())
	var n trafficCounts
	done := make(chan error, 1)
	go func() { done <- runTrafficCounted(ctx, rdb, trafficConfig{Prefix: prefix}, &n) }()
	defer func() {
		cancel()
		<-done
	}()

	console := inspect.New(rdb, nil)
	seen := map[string]bool{}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && len(seen) < 3 {
		d, err := walk.Discover(ctx, console, prefix+"demo:*")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range d.Locks {
			switch {
			case l.Name == prefix+demoRW && l.Kind == inspect.KindRWLock && len(l.Holders) > 0:
				seen[demoRW] = true
			case l.Name == prefix+demoFair && l.Kind == inspect.KindFairLock && len(l.Waiters) > 0 && l.Waiters[0].Channel != "":
				seen[demoFair] = true
			case l.Name == prefix+demoFenced && l.Kind == inspect.KindFencedLock && l.FencingToken > 0:
				seen[demoFenced] = true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, name := range []string{demoRW, demoFair, demoFenced} {
		if !seen[name] {
			t.Errorf("within 15 s the console never listed %s as its kind (seen %v)", name, seen)
		}
	}
}
