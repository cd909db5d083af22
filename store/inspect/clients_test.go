package inspect

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

func TestReadRegistryDescribesHolders(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	app := store.New(rdb, &store.Options{App: "orders-api", Version: "v1", Beat: time.Hour})
	t.Cleanup(func() { _ = app.Close() })
	insp := New(rdb, nil)
	name := redistest.Prefix(t) + "lock"
	l := app.NewLock(name, &store.LockOptions{Owner: "77"})
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	unlockAtEnd(t, l)

	// The client's first beat runs in its own goroutine right after New.
	var reg *Registry
	for i := 0; i < 100; i++ {
		var err error
		if reg, err = insp.ReadRegistry(ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := reg.Clients[app.ID()]; ok {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ci, ok := reg.Lookup(l.HolderID())
	if !ok {
		t.Fatalf("client %s not in the registry", app.ID())
	}
	host, _ := os.Hostname()
	if ci.App != "orders-api" || ci.Host != host || ci.PID != os.Getpid() || ci.Version != "v1" || ci.Gone() {
		t.Fatalf("client = %+v", ci)
	}
	want := "orders-api on " + host + " (pid " + itoa(os.Getpid()) + "), owner 77"
	if got := DescribeHolder(reg, l.HolderID()); got != want {
		t.Fatalf("DescribeHolder = %q, want %q", got, want)
	}
	foreign := "03fb0b93-0000-4000-8000-000000000001:44"
	if got := DescribeHolder(reg, foreign); !strings.HasPrefix(got, "unregistered client 03fb0b93-0000-4000-8000-000000000001 (Redisson or other)") {
		t.Fatalf("foreign holder = %q", got)
	}
	if got := DescribeHolder(reg, "a-token"); got != "a-token" {
		t.Fatalf("token = %q", got)
	}
	if err := app.Close(); err != nil {
		t.Fatal(err)
	}
	if reg, _ = insp.ReadRegistry(ctx); reg != nil {
		if _, ok := reg.Clients[app.ID()]; ok {
			t.Fatal("closed client still registered")
		}
	}
}

func TestClientGoneAfterThreeBeats(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	rec := func(ageMS, beatMS int64) string {
		return `{"app":"a","host":"h","pid":1,"version":"","started_ms":1,"heartbeat_ms":` +
			itoa(int(now.UnixMilli()-ageMS)) + `,"beat_ms":` + itoa(int(beatMS)) + `}`
	}
	reg := parseRegistry(map[string]string{"fresh": rec(14999, 5000), "gone": rec(15001, 5000), "junk": "{"}, now)
	if reg.Clients["fresh"].Gone() || !reg.Clients["gone"].Gone() {
		t.Fatalf("gone: fresh %v, gone %v", reg.Clients["fresh"].Gone(), reg.Clients["gone"].Gone())
	}
	if _, ok := reg.Clients["junk"]; ok {
		t.Fatal("unparseable record kept")
	}
}

func TestReleaseAllIsHolderChecked(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	app := store.New(rdb, &store.Options{NoRegistry: true})
	other := store.New(rdb, &store.Options{NoRegistry: true})
	insp := New(rdb, nil)
	p := redistest.Prefix(t)
	a := app.NewLock(p+"a", &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
	b := app.NewLock(p+"b", &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
	for _, l := range []*store.Lock{a, b} {
		if err := l.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		unlockAtEnd(t, l)
	}
	var locks []LockInfo
	for _, n := range []string{p + "a", p + "b"} {
		l, err := insp.GetLock(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		locks = append(locks, *l)
	}
	holds := ClientHolds(locks)[app.ID()]
	if len(holds) != 2 || holds[0].Lock != p+"a" || holds[0].What != "holds" {
		t.Fatalf("holds = %+v", holds)
	}
	// b changes hands after the console looked: release-all must leave it.
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	ob := other.NewLock(p+"b", &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
	if err := ob.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	unlockAtEnd(t, ob)

	res, err := insp.ReleaseAll(ctx, app.ID(), holds)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Err != nil || !errors.Is(res[1].Err, ErrHolderChanged) {
		t.Fatalf("results = %+v", res)
	}
	if n := rdb.Exists(ctx, p+"a").Val(); n != 0 {
		t.Fatal("a not released")
	}
	if got := rdb.HExists(ctx, p+"b", ob.HolderID()).Val(); !got {
		t.Fatal("b's new holder lost the lock")
	}
	if _, err := insp.ReleaseAll(ctx, "not-a-uuid", holds); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestHoldTimesRecordedByLockScripts(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := t.Context()
	app := store.New(rdb, &store.Options{NoRegistry: true})
	insp := New(rdb, nil)
	name := redistest.Prefix(t) + "held"
	l := app.NewLock(name, &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	unlockAtEnd(t, l)
	info, err := insp.GetLock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	h := info.Holders[0]
	if h.AcquiredMS <= 0 || h.RenewedMS != h.AcquiredMS {
		t.Fatalf("after acquire: %+v", h)
	}
	if rdb.PTTL(ctx, store.HeldKey(name)).Val() <= 0 {
		t.Fatal("hold times do not expire with the lock")
	}
	time.Sleep(5 * time.Millisecond) // so the renewal's Redis time differs
	if err := l.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	smp, err := insp.Sample(ctx, []string{name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := smp.Locks[0].Holders[0]
	if r.AcquiredMS != h.AcquiredMS || r.RenewedMS <= h.RenewedMS {
		t.Fatalf("after renew: %+v (before %+v)", r, h)
	}
	AnnotateHolder(nil, &r, time.Time{}, time.UnixMilli(r.AcquiredMS+3000))
	if r.HeldMS != 3000 || r.HeldSinceSeen {
		t.Fatalf("annotated: %+v", r)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(ctx, store.HeldKey(name)).Val() != 0 {
		t.Fatal("hold times outlive the release")
	}
}
