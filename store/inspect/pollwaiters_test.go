package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// waitDone runs lock in a goroutine; its result arrives on the channel.
func waitDone(ctx context.Context, lock func(context.Context) error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- lock(ctx) }()
	return done
}

// The kinds that wait by polling show their waiters: a spin lock's, a
// read-write lock's writer and a token lock's, each with the holder field
// (or token) it waits to take and its arrival, gone once it is granted.
func TestPollWaitersRead(t *testing.T) {
	e := newWaitEnv(t)
	ctx := t.Context()
	p := redistest.Prefix(t)
	poll := 20 * time.Millisecond

	check := func(name, want string, holder, waiter interface {
		Unlock(context.Context) error
	}, done <-chan error) {
		t.Helper()
		l := e.waiters(t, name, 1)
		w := l.Waiters[0]
		now := redistest.NowMS(t, e.insp.rdb)
		if w.Owner != want || w.Position != 1 || w.ArrivedMS <= 0 || w.ArrivedMS > now || w.RemainingMS <= 0 {
			t.Errorf("%s: waiter %+v, want %q arrived before %d with a live entry", name, w, want, now)
		}
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s: waiter: %v", name, err)
		}
		e.waiters(t, name, 0)
		if err := waiter.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}

	spin := p + "spin"
	sa := e.a.NewSpinLock(spin, &store.LockOptions{Owner: "a"})
	if err := sa.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	sb := e.b.NewSpinLock(spin, &store.LockOptions{Owner: "b", RetryInterval: poll})
	check(spin, sb.HolderID(), sa, sb, waitDone(ctx, sb.Lock))

	rw := p + "rw"
	wa := e.a.NewRWLock(rw, &store.LockOptions{Owner: "a"}).Writer()
	if err := wa.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	wb := e.b.NewRWLock(rw, &store.LockOptions{Owner: "b", RetryInterval: poll}).Writer()
	check(rw, wb.HolderID(), wa, wb, waitDone(ctx, wb.Lock))

	tok := p + "tok"
	e.insp = New(redistest.Universal(t), &Options{Patterns: ObjectPatterns{TokenLocks: []string{p + "tok*"}}})
	ta := e.a.NewTokenLock(tok, nil)
	if err := ta.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	tb := e.b.NewTokenLock(tok, &store.LockOptions{RetryInterval: poll})
	check(tok, tb.HolderID(), ta, tb, waitDone(ctx, tb.Lock))
}

// A spin lock's waiter joins the wait-for graph like a queued one: A holds
// L and waits for spin lock S, which B holds while it waits for L.
func TestPollWaiterInDeadlock(t *testing.T) {
	e := newWaitEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p := redistest.Prefix(t)
	lName, sName := p+"{dlp}:L", p+"{dlp}:S"
	la := e.a.NewLock(lName, &store.LockOptions{Owner: "a"})
	sb := e.b.NewSpinLock(sName, &store.LockOptions{Owner: "b"})
	if err := la.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sb.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	sa := e.a.NewSpinLock(sName, &store.LockOptions{Owner: "a", RetryInterval: 20 * time.Millisecond})
	lb := e.b.NewLock(lName, &store.LockOptions{Owner: "b"})
	aDone, bDone := waitDone(ctx, sa.Lock), waitDone(ctx, lb.Lock)
	l, s := e.waiters(t, lName, 1), e.waiters(t, sName, 1)
	cycles := Deadlocks([]LockInfo{*l, *s})
	if len(cycles) != 1 || len(cycles[0].Cycle) != 2 {
		t.Fatalf("deadlocks %+v, want one cycle through %s and %s", cycles, lName, sName)
	}
	cancel()
	<-aDone
	<-bDone
	for _, u := range []func(context.Context) error{la.Unlock, sb.Unlock} {
		if err := u(t.Context()); err != nil {
			t.Error(err)
		}
	}
}
