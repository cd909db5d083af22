package store

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
	"runtime"
)

// lockTestClient is a store Client on its own connection pool to the shared
// test server.
func lockTestClient(t *testing.T) (*Client, *redis.Client) {
	t.Helper()
	rdb := redistest.Client(t)
	return New(rdb, nil), rdb
}

// holdLoop has each of locks take and release its lock rounds times, each
// in a goroutine of its own, running during(ctx, i) while lock i is held
// (when during is not nil). The first error fails the test.
func holdLoop(t *testing.T, ctx context.Context, locks []*Lock, rounds int, during func(context.Context, int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(locks))
	for i, l := range locks {
		wg.Go(func() {
			for range rounds {
				if err := l.Lock(ctx); err != nil {
					errs <- err
					return
				}
				if during != nil {
					if err := during(ctx, i); err != nil {
						errs <- err
						return
					}
				}
				if err := l.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// heldBySole checks the lock hash at name holds holder alone, at count 1,
// as Redisson's layout has it, beside lockwarden's own fields: that
// holder's hold record and nothing else but the queued mark.
func heldBySole(t *testing.T, rdb redis.Cmdable, name, holder string) {
	t.Helper()
	fields := rdb.HGetAll(t.Context(), name).Val()
	delete(fields, wire.QueuedField)
	_, _, recorded := wire.ParseHoldRecord(fields[wire.HoldField(holder)])
	if len(fields) != 2 || fields[holder] != "1" || !recorded {
		t.Fatalf("lock hash = %v, want only %s at count 1 and its hold record", fields, holder)
	}
}

func TestLockMutualExclusion(t *testing.T) {
	const clients, iterations = 16, 100
	name := redistest.Prefix(t) + "lock"
	counter := redistest.Prefix(t) + "counter"
	ctx := redistest.Context(t, 60*time.Second)

	locks := make([]*Lock, clients)
	rdbs := make([]redis.UniversalClient, clients)
	for i := range locks {
		// Each client its own connection pool (a Cluster client on a
		// Cluster), as separate processes would have.
		rdbs[i] = redistest.Universal(t)
		locks[i] = New(rdbs[i], nil).NewLock(name, nil)
	}
	holdLoop(t, ctx, locks, iterations, func(ctx context.Context, i int) error {
		// Deliberately non-atomic: only the lock keeps this exact. The
		// two round trips leave the window for another holder (with 16
		// clients, a broken lock loses updates at once); the yield widens
		// it without a timer per iteration.
		v, err := rdbs[i].Get(ctx, counter).Int()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		runtime.Gosched()
		return rdbs[i].Set(ctx, counter, v+1, 0).Err()
	})
	check := redistest.Client(t)
	if got, _ := check.Get(ctx, counter).Int(); got != clients*iterations {
		t.Fatalf("counter = %d, want %d: two holders overlapped", got, clients*iterations)
	}
	if n := check.Exists(ctx, name).Val(); n != 0 {
		t.Errorf("lock key still exists after every holder released it")
	}
}

func TestLockContentionOneWinner(t *testing.T) {
	const n = 100
	c, _ := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)

	start := make(chan struct{})
	results := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		l := c.NewLock(name, nil)
		redistest.UnlockAtEnd(t, l)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = l.TryLock(ctx)
		}()
	}
	close(start)
	wg.Wait()

	won := 0
	for i, err := range results {
		switch {
		case err == nil:
			won++
		case errors.Is(err, ErrNotObtained):
			var le *LockedError
			if !errors.As(err, &le) || le.TTL <= 0 || le.TTL > DefaultLockLease {
				t.Errorf("loser %d: %v: want a *LockedError with the holder's TTL", i, err)
			}
		default:
			t.Errorf("attempt %d: unexpected error %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d winners, want exactly 1", won)
	}
}

func TestLockReentrancy(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	l := c.NewLock(name, &LockOptions{Lease: 10 * time.Second})
	redistest.UnlockAtEnd(t, l)

	count := func() string {
		v, err := rdb.HGet(ctx, name, l.HolderID()).Result()
		if errors.Is(err, redis.Nil) {
			return "absent"
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "1" {
		t.Fatalf("after first lock count = %s, want 1", got)
	}
	// Let the lease run down a little so the reset is visible.
	rdb.PExpire(ctx, name, 2*time.Second)
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "2" {
		t.Fatalf("after re-entry count = %s, want 2", got)
	}
	if pttl := rdb.PTTL(ctx, name).Val(); pttl <= 5*time.Second {
		t.Fatalf("re-entry did not restart the lease: PTTL = %v", pttl)
	}

	// A different owner is not the holder: refused, and nothing moves.
	other := c.NewLock(name, nil)
	before := rdb.HGetAll(ctx, name).Val()
	pttlBefore := rdb.PTTL(ctx, name).Val()
	if err := other.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("non-holder Unlock = %v, want ErrNotHeld", err)
	}
	if err := other.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
		t.Fatalf("non-holder TryLock = %v, want ErrNotObtained", err)
	}
	after := rdb.HGetAll(ctx, name).Val()
	if len(after) != 2 || !maps.Equal(after, before) {
		t.Fatalf("non-holder changed the hash: %v -> %v", before, after)
	}
	if pttl := rdb.PTTL(ctx, name).Val(); pttl > pttlBefore || pttl <= 0 {
		t.Fatalf("non-holder changed the lease: %v -> %v", pttlBefore, pttl)
	}

	// Same Owner on the same Client is the same holder.
	twin := c.NewLock(name, &LockOptions{Owner: l.HolderID()[len(c.ID())+1:]})
	if twin.HolderID() != l.HolderID() {
		t.Fatalf("twin holder %q != %q", twin.HolderID(), l.HolderID())
	}
	if err := twin.TryLock(ctx); err != nil {
		t.Fatalf("same owner could not re-enter: %v", err)
	}
	if err := twin.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "1" {
		t.Fatalf("after one unlock count = %s, want 1", got)
	}
	if !l.shared.renewing(name, l.HolderID()) {
		t.Fatal("watchdog stopped while one level is still held")
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != "absent" {
		t.Fatalf("after final unlock field = %s, want absent", got)
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("final unlock left the key")
	}
	if l.shared.renewing(name, l.HolderID()) {
		t.Fatal("watchdog still registered after the final unlock")
	}
	if err := l.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("extra Unlock = %v, want ErrNotHeld", err)
	}
}

func TestLockAbandonedHolderExpires(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	const lease = time.Second

	start := time.Now()
	holder := c.NewLock(name, &LockOptions{Lease: lease, NoWatchdog: true})
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if holder.shared.renewing(name, holder.HolderID()) {
		t.Fatal("NoWatchdog handle started a watchdog")
	}
	// The holder "crashes" here: it never renews nor unlocks.
	waiter := c.NewLock(name, &LockOptions{RetryInterval: time.Minute})
	redistest.UnlockAtEnd(t, waiter)
	if err := waiter.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if took < lease-50*time.Millisecond {
		t.Fatalf("waiter got the lock after %v, before the holder's %v lease ran out", took, lease)
	}
	// Woken by the lease's end, not by its one-minute retry cap; the
	// bound leaves a loaded machine room.
	if took > lease+redistest.Patience {
		t.Fatalf("waiter got the lock after %v, want soon after the lease %v (its retry cap is a minute)", took, lease)
	}
	heldBySole(t, rdb, name, waiter.HolderID())
}

func TestLockClosedClientWatchdogStops(t *testing.T) {
	crashing := redistest.Universal(t)
	c := New(crashing, nil)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	const lease = 600 * time.Millisecond

	holder := c.NewLock(name, &LockOptions{Lease: lease})
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if !holder.shared.renewing(name, holder.HolderID()) {
		t.Fatal("no watchdog after acquire")
	}
	crashing.Close() // the process "dies": no renewals, no unlock

	other, _ := lockTestClient(t)
	waiter := other.NewLock(name, &LockOptions{RetryInterval: time.Minute})
	redistest.UnlockAtEnd(t, waiter)
	start := time.Now()
	if err := waiter.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// Woken by the lease's end, not by its one-minute retry cap.
	if took := time.Since(start); took > lease+redistest.Patience {
		t.Fatalf("waiter needed %v, want soon after the lease %v (its retry cap is a minute)", took, lease)
	}
	redistest.Eventually(t, "the watchdog of the closed client stops", func() bool {
		return !holder.shared.renewing(name, holder.HolderID())
	})
}

func TestLockWatchdogKeepsLease(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)

	holder := c.NewLock(name, &LockOptions{Lease: time.Second})
	redistest.UnlockAtEnd(t, holder)
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	other, _ := lockTestClient(t)
	rival := other.NewLock(name, nil)
	// Renewed every third of the lease: four renewals outlast it.
	for i := range 4 {
		redistest.WaitRenewed(t, rdb, name, 1)
		if err := rival.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
			t.Fatalf("rival TryLock after %d renewals = %v, want ErrNotObtained", i+1, err)
		}
	}
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("holder lost the lock despite the watchdog: %v", err)
	}
	if holder.shared.renewing(name, holder.HolderID()) {
		t.Fatal("watchdog still registered after the final unlock")
	}
}

func TestLockWatchdogStopsWhenFieldGone(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)

	l := c.NewLock(name, &LockOptions{Lease: 300 * time.Millisecond})
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	// Someone else's lock now sits at the name (e.g. force-unlocked, then
	// taken): the watchdog must neither extend nor keep running.
	rdb.Del(ctx, name)
	rdb.HSet(ctx, name, "someone-else:1", 1)
	rdb.PExpire(ctx, name, 20*time.Second)
	redistest.Eventually(t, "the watchdog stops after the holder field vanished", func() bool {
		return !l.shared.renewing(name, l.HolderID())
	})
	if pttl := rdb.PTTL(ctx, name).Val(); pttl > 20*time.Second || pttl <= 0 {
		t.Fatalf("other holder's PTTL = %v", pttl)
	}
	if err := l.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Unlock after losing the lock = %v, want ErrNotHeld", err)
	}
	if rdb.HGet(ctx, name, "someone-else:1").Val() != "1" {
		t.Fatal("Unlock touched another holder's lock")
	}
}

func TestLockRefreshWithoutWatchdog(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)
	l := c.NewLock(name, &LockOptions{Lease: 5 * time.Second, NoWatchdog: true})
	if err := l.Refresh(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Refresh before lock = %v, want ErrNotHeld", err)
	}
	if rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("Refresh of an absent lock created a key")
	}
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.PExpire(ctx, name, time.Second)
	if err := l.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if pttl := rdb.PTTL(ctx, name).Val(); pttl <= 2*time.Second {
		t.Fatalf("Refresh did not restart the lease: PTTL = %v", pttl)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLockCtxEndsWait(t *testing.T) {
	ctx, _, name, holder := heldLock(t)
	c := holder.c
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := c.NewLock(name, nil).Lock(short)
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock past deadline = %v, want ErrNotObtained and DeadlineExceeded", err)
	}
	done, cancel2 := context.WithCancel(ctx)
	cancel2()
	if err := c.NewLock(name, nil).Lock(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with cancelled ctx = %v, want context.Canceled", err)
	}
}

func TestLockRedissonRawLayout(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	channel := "redisson_lock__channel:{" + name + "}"
	ctx := redistest.Context(t, 30*time.Second)

	// A Java client holds it: field "<uuid>:<thread id>", count, lease.
	javaField := "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
	rdb.HSet(ctx, name, javaField, 1)
	rdb.PExpire(ctx, name, 30*time.Second)

	l := c.NewLock(name, &LockOptions{RetryInterval: time.Minute})
	redistest.UnlockAtEnd(t, l)
	err := l.TryLock(ctx)
	var le *LockedError
	if !errors.As(err, &le) || le.TTL < 25*time.Second {
		t.Fatalf("TryLock against a Redisson holder = %v, want *LockedError with ~30s TTL", err)
	}

	got := make(chan error, 1)
	go func() { got <- l.Lock(ctx) }()
	redistest.WaitForSubscriber(t, rdb, channel)
	// Redisson's unlock: DEL, then PUBLISH "0".
	rdb.Del(ctx, name)
	released := time.Now()
	rdb.Publish(ctx, channel, "0")
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter did not wake on Redisson's unlock message")
	}
	if took := time.Since(released); took > 2*time.Second {
		t.Fatalf("waiter took %v after the unlock message", took)
	}
	heldBySole(t, rdb, name, l.HolderID())
	if !strings.HasPrefix(l.HolderID(), c.ID()+":") {
		t.Fatalf("our holder field %s, want %s:<owner>", l.HolderID(), c.ID())
	}

	// Our release speaks Redisson: exactly "0" on the braced channel.
	sub := rdb.Subscribe(ctx, channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	msg, err := redistest.ReceiveMessage(sub, 5*time.Second)
	if err != nil {
		t.Fatalf("no unlock message: %v", err)
	}
	if msg.Channel != channel || msg.Payload != "0" {
		t.Fatalf("unlock published %q on %q, want \"0\" on %q", msg.Payload, msg.Channel, channel)
	}
}

func TestLockStatsRing(t *testing.T) {
	c, rdb := lockTestClient(t)
	name := redistest.Prefix(t) + "lock"
	ctx := redistest.Context(t, 30*time.Second)

	a := c.NewLock(name, nil)
	b := c.NewLock(name, nil)
	redistest.UnlockAtEnd(t, a)
	redistest.UnlockAtEnd(t, b)
	mustNil := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustNil(a.TryLock(ctx))  // a
	mustNil(a.TryLock(ctx))  // a (re-entry)
	for i := 0; i < 2; i++ { // r, r
		if err := b.TryLock(ctx); !errors.Is(err, ErrNotObtained) {
			t.Fatalf("b.TryLock while a holds = %v, want ErrNotObtained", err)
		}
	}
	mustNil(a.Unlock(ctx))
	mustNil(a.Unlock(ctx))
	mustNil(b.TryLock(ctx)) // a
	mustNil(b.Unlock(ctx))

	got := redistest.StatsTotal(t, rdb, wire.StatsKey(name))
	if want := (redistest.Outcomes{Acquired: 3, Rejected: 2}); got != want {
		t.Fatalf("stats ring = %+v, want %+v", got, want)
	}
	if pttl := rdb.PTTL(ctx, wire.StatsKey(name)).Val(); pttl <= 0 || pttl > wire.StatsTTLMS*time.Millisecond {
		t.Fatalf("stats PTTL = %v, want (0, %dms]", pttl, wire.StatsTTLMS)
	}

	// A key of another type is an error outcome, and is left alone.
	rdb.Set(ctx, name, "app data", 0)
	if err := a.TryLock(ctx); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("TryLock on a string = %v, want ErrWrongKind", err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Unlock on a string = %v, want ErrNotHeld", err)
	}
	if rdb.Get(ctx, name).Val() != "app data" {
		t.Fatal("the string key was changed")
	}
	got = redistest.StatsTotal(t, rdb, wire.StatsKey(name))
	if want := (redistest.Outcomes{Acquired: 3, Rejected: 2, Errors: 1}); got != want {
		t.Fatalf("stats ring after wrong type = %+v, want %+v", got, want)
	}
}

func TestLockValidationSendsNothing(t *testing.T) {
	// Nothing listens here: any command sent would fail with a dial error,
	// not a validation error.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	c := New(rdb, nil)
	ctx := redistest.Context(t, 10*time.Second)

	long := string(make([]byte, MaxNameLen+1))
	cases := []struct {
		name, field string
		opts        *LockOptions
	}{
		{"", "name", nil},
		{long, "name", nil},
		{"ok", "lease", &LockOptions{Lease: -time.Second}},
		{"ok", "lease", &LockOptions{Lease: time.Microsecond}},
		{"ok", "owner", &LockOptions{Owner: string(make([]byte, MaxOwnerLen+1))}},
		{"ok", "retry interval", &LockOptions{RetryInterval: -1}},
	}
	for _, tc := range cases {
		l := c.NewLock(tc.name, tc.opts)
		calls := map[string]func(context.Context) error{
			"TryLock": l.TryLock, "Lock": l.Lock, "Unlock": l.Unlock, "Refresh": l.Refresh,
		}
		for call, f := range calls {
			err := f(ctx)
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Field != tc.field || !errors.Is(err, ErrInvalid) {
				t.Errorf("%s(name len %d, %+v) = %v, want a validation error on %q", call, len(tc.name), tc.opts, err, tc.field)
			}
		}
	}
	// And a valid call does reach the (absent) server, so the check above
	// can tell the two apart.
	if err := c.NewLock("ok", nil).TryLock(ctx); err == nil || errors.Is(err, ErrInvalid) {
		t.Fatalf("valid TryLock against a closed port = %v, want a connection error", err)
	}
}
