package walk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// lightEnv is a Walker on the shared Redis (a Cluster under
// LOCKWARDEN_TEST_TOPOLOGY=cluster) whose commands are recorded, and a
// writer client.
type lightEnv struct {
	rdb   redis.UniversalClient
	w     *Walker
	sent  *inspecttest.Counter
	every int
	p     string
}

func newLightEnv(t *testing.T, every int) *lightEnv {
	t.Helper()
	rdb := redistest.Universal(t)
	ic := redistest.Universal(t)
	if err := ic.Ping(t.Context()).Err(); err != nil { // connect before counting
		t.Fatal(err)
	}
	h := &inspecttest.Counter{}
	ic.AddHook(h)
	w, err := New(inspect.New(ic, nil), "*", &Options{NoScan: true, IdleEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	return &lightEnv{rdb: rdb, w: w, sent: h, every: every, p: redistest.Prefix(t)}
}

// foreignLock writes a Redisson lock held by a thread of another process,
// and deletes it and every side key when the test ends.
func (e *lightEnv) foreignLock(t *testing.T, name string) {
	t.Helper()
	ctx := t.Context()
	if err := e.rdb.HSet(ctx, name, inspecttest.HolderUUID+":1", 1).Err(); err != nil {
		t.Fatal(err)
	}
	e.rdb.PExpire(ctx, name, time.Hour)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, k := range []string{name, wire.FairLockQueueKey(name), wire.FairLockTimeoutKey(name),
			wire.FencingTokenKey(name), wire.HeldKey(name), wire.StatsKey(name)} {
			e.rdb.Del(ctx, k) // one by one: on a Cluster odd names spread them over slots
		}
	})
}

// tick runs one Tick over locks and returns the sample.
func (e *lightEnv) tick(t *testing.T, locks []string) *inspect.Sample {
	t.Helper()
	s, err := e.w.Tick(t.Context(), locks, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// settle ticks until every lock is idle, then forgets what was sent.
func (e *lightEnv) settle(t *testing.T, locks []string) {
	t.Helper()
	for range idleAfter + 1 {
		if s := e.tick(t, locks); len(s.Locks) != len(locks) {
			t.Fatalf("settling: %d locks listed, want %d", len(s.Locks), len(locks))
		}
	}
	e.sent.TakeLog()
}

// turn ticks every ticks, in which each idle lock is read once.
func (e *lightEnv) turn(t *testing.T, locks []string) inspecttest.Log {
	t.Helper()
	for range e.every {
		e.tick(t, locks)
	}
	return e.sent.TakeLog()
}

func lockIn(s *inspect.Sample, name string) *inspect.LockInfo {
	for i := range s.Locks {
		if s.Locks[i].Name == name {
			return &s.Locks[i]
		}
	}
	return nil
}

// An idle read of a Redisson lock with no side keys is its hash, its lease
// and one EXISTS (it was eight commands) over the fair queue, the stats
// ring and in turn the fencing token or the hold-times record; a lock with
// a side key, or one whose side keys hash elsewhere, keeps the full read.
func TestIdleReadOfPlainLockIsThreeCommands(t *testing.T) {
	e := newLightEnv(t, 5)
	const n = 10
	var locks, plain []string
	for i := range n {
		name := fmt.Sprintf("%slight:%d", e.p, i)
		e.foreignLock(t, name)
		plain = append(plain, name)
	}
	fenced := e.p + "light:fenced"
	e.foreignLock(t, fenced)
	e.rdb.Set(t.Context(), wire.FencingTokenKey(fenced), 7, 0)
	odd := e.p + "light:odd}brace" // Redisson's side keys hash "...:odd", the name all of it
	if wire.Slot(wire.FairLockQueueKey(odd)) == wire.Slot(odd) {
		t.Fatalf("%q: side keys in the name's slot; the test needs a name whose are not", odd)
	}
	e.foreignLock(t, odd)
	locks = append(append(locks, plain...), fenced, odd)
	e.settle(t, locks)

	got := e.turn(t, locks)
	two := append(slices.Clone(got), e.turn(t, locks)...)
	for _, name := range plain {
		for cmd, want := range map[string]int{"hgetall": 1, "pttl": 1} {
			if c := got.Count(cmd, name); c != want {
				t.Errorf("%s: %d %s of the lock in one turn, want %d", name, c, cmd, want)
			}
		}
		for _, key := range []string{wire.FairLockQueueKey(name), wire.LockQueueKey(name), wire.StatsKey(name)} {
			if c := got.Count("exists", key); c != 1 {
				t.Errorf("%s: %d EXISTS over %s in one turn, want 1", name, c, key)
			}
		}
		// The token and the hold-times record take turns.
		if tok, held := two.Count("exists", wire.FencingTokenKey(name)), two.Count("exists", wire.HeldKey(name)); tok != 1 || held != 1 {
			t.Errorf("%s: in two turns the token was checked %d times and the hold-times record %d, want once each", name, tok, held)
		}
		for _, key := range []string{wire.FairLockQueueKey(name), wire.FairLockTimeoutKey(name),
			wire.FencingTokenKey(name), wire.HeldKey(name), wire.StatsKey(name)} {
			for _, cmd := range []string{"lrange", "llen", "zrange", "get", "hgetall"} {
				if c := got.Count(cmd, key); c != 0 {
					t.Errorf("%s: idle read sent %s %s", name, cmd, key)
				}
			}
		}
	}
	perRead := got.Count("hgetall", "") + got.Count("pttl", "") + got.Count("exists", "") +
		got.Count("lrange", "") + got.Count("llen", "") + got.Count("get", "")
	// Fenced and odd: 11 each, 9 here (their two ZRANGEs, of the fair
	// timeouts and store's queue, are left out with the registry's); the
	// plain ones 3.
	if want := 3*n + 2*9; perRead != want {
		t.Errorf("one turn sent %d lock reads, want %d (3 per plain lock, full reads of the other two): %v", perRead, want, got)
	}
	for _, name := range []string{fenced, odd} {
		if got.Count("get", wire.FencingTokenKey(name)) != 1 || got.Count("lrange", wire.FairLockQueueKey(name)) != 1 ||
			got.Count("hgetall", wire.StatsKey(name)) != 1 {
			t.Errorf("%s: not read in full in one turn", name)
		}
	}
}

// What appears beside an idle lock without changing its hash shows: a
// fair-lock waiter joining and a stats ring a store client starts within
// idleEvery+1 ticks, a fencing token or a hold-times record (written when
// the same holder took the lock again between two reads) within
// 2*idleEvery+1; and a deleted lock goes.
func TestIdleReadSeesSideKeysAppear(t *testing.T) {
	e := newLightEnv(t, 5)
	ctx := t.Context()
	waited, fenced, used, held, gone := e.p+"side:waited", e.p+"side:fenced", e.p+"side:used", e.p+"side:held", e.p+"side:gone"
	locks := []string{waited, fenced, used, held, gone}
	for _, name := range locks {
		e.foreignLock(t, name)
	}
	e.settle(t, locks)
	if got := e.turn(t, locks); got.Count("exists", "") != len(locks) {
		t.Fatalf("the idle locks were not read lightly: %v", got)
	}

	waiter := inspecttest.HolderUUID + ":9"
	deadline := redistest.NowMS(t, e.rdb) + 300_000
	e.rdb.RPush(ctx, wire.FairLockQueueKey(waited), waiter)
	e.rdb.ZAdd(ctx, wire.FairLockTimeoutKey(waited), redis.Z{Score: float64(deadline), Member: waiter})
	e.rdb.Set(ctx, wire.FencingTokenKey(fenced), 41, 0)
	var lerr *store.LockedError
	if err := store.New(e.rdb, nil).NewLock(used, nil).TryLock(ctx); !errors.As(err, &lerr) {
		t.Fatalf("store TryLock on a held foreign lock: %v, want a LockedError", err)
	}
	if n, _ := e.rdb.Exists(ctx, wire.StatsKey(used)).Result(); n != 1 {
		t.Fatal("the store client's attempt left no stats ring")
	}
	acquired := redistest.NowMS(t, e.rdb) - 5000
	e.rdb.HSet(ctx, wire.HeldKey(held), inspecttest.HolderUUID+":1", fmt.Sprintf("%d %d", acquired, acquired+1000))
	e.rdb.Del(ctx, gone)

	seen := map[string]int{}
	for i := 1; i <= 2*e.every+1; i++ {
		s := e.tick(t, locks)
		sent := e.sent.TakeLog()
		if l := lockIn(s, waited); l != nil && l.Kind == inspect.KindFairLock && l.WaitersTotal == 1 &&
			len(l.Waiters) == 1 && l.Waiters[0].ID == waiter && seen[waited] == 0 {
			seen[waited] = i
		}
		if l := lockIn(s, fenced); l != nil && l.Kind == inspect.KindFencedLock && l.FencingToken == 41 && seen[fenced] == 0 {
			seen[fenced] = i
		}
		if sent.Count("hgetall", wire.StatsKey(used)) > 0 && seen[used] == 0 {
			seen[used] = i
		}
		if l := lockIn(s, held); l != nil && len(l.Holders) == 1 && l.Holders[0].AcquiredMS == acquired && seen[held] == 0 {
			seen[held] = i
		}
		if lockIn(s, gone) == nil && seen[gone] == 0 {
			seen[gone] = i
		}
	}
	t.Logf("changes shown at ticks %v", seen)
	for _, name := range locks {
		within := e.every + 1
		if name == fenced || name == held {
			within = 2*e.every + 1
		}
		if seen[name] == 0 || seen[name] > within {
			t.Errorf("%s: the change showed at tick %d, want within %d", name, seen[name], within)
		}
	}
	// Now they have side keys: every idle read is full, and the state holds.
	live := []string{waited, fenced, used, held}
	e.settle(t, live)
	got := e.turn(t, live)
	for _, name := range live {
		// At least once: the used one's ring counts keep it busy a while.
		if got.Count("exists", wire.FairLockQueueKey(name)) != 0 || got.Count("lrange", wire.FairLockQueueKey(name)) < 1 {
			t.Errorf("%s: a lock with side keys was read lightly: %v", name, got)
		}
	}
	s := e.tick(t, live)
	if l := lockIn(s, waited); l == nil || l.Kind != inspect.KindFairLock || l.WaitersTotal != 1 {
		t.Errorf("the waited lock reads %+v, want fair with its waiter", l)
	}
	if l := lockIn(s, fenced); l == nil || l.Kind != inspect.KindFencedLock || l.FencingToken != 41 {
		t.Errorf("the fenced lock reads %+v, want token 41", l)
	}
	if l := lockIn(s, held); l == nil || len(l.Holders) != 1 || l.Holders[0].AcquiredMS != acquired {
		t.Errorf("the lock with hold times reads %+v, want acquired at %d", l, acquired)
	}
}
