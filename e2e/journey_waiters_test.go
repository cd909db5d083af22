package e2e

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// lockAsync runs lk.Lock in a goroutine; its result arrives on the channel.
func lockAsync(ctx context.Context, lk *store.Lock) <-chan error {
	done := make(chan error, 1)
	go func() { done <- lk.Lock(ctx) }()
	return done
}

// unlockAtEnd releases lk when the test ends, whoever holds it by then.
func (j *journey) unlockAtEnd(lks ...*store.Lock) {
	j.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(j.ctx), 2*time.Second)
		defer cancel()
		for _, lk := range lks {
			_ = lk.Unlock(ctx)
		}
	})
}

// Journey: a lock's waiters appear and leave live. A store client holds
// the lock; the lock's page is open; a second service's Lock call queues
// and its row appears, naming the owner it waits as and its application;
// the holder lets go, the waiter takes the lock, and its row leaves.
func TestJourneyWaitersAppearAndLeave(t *testing.T) {
	j := newJourney(t)
	const name = "orders:lock:invoice-42"
	holder := store.New(j.rdb, &store.Options{App: "orders-api"}).NewLock(name, &store.LockOptions{Owner: "req-1"})
	if err := holder.Lock(j.ctx); err != nil {
		t.Fatal(err)
	}
	j.unlockAtEnd(holder)
	j.wrote(name, "locks")
	j.listed()

	j.open("/locks/" + url.PathEscape(name))
	j.waitLive(2)
	if n := j.count(`[data-testid=waiter-row]`); n != 0 {
		t.Fatalf("%d waiter rows before anyone waits", n)
	}
	worker := store.New(j.rdb, &store.Options{App: "billing-worker"})
	j.registered(worker)
	waiter := worker.NewLock(name, &store.LockOptions{Owner: "job-7"})
	got := lockAsync(j.ctx, waiter)
	j.unlockAtEnd(waiter)

	row := `[data-testid=waiter-row]`
	j.waitText("the waiter's row", row+` [data-testid=waiter-owner]`, 10*time.Second,
		func(s string) bool { return s == waiter.HolderID() })
	if who := j.text(row + ` [data-testid=waiter-who]`); !strings.Contains(who, "billing-worker") {
		t.Errorf("waiter shown as %q, want its application", who)
	}
	if total := j.text(`[data-testid=waiters-total]`); total != "1" {
		t.Errorf("waiters total %q, want 1", total)
	}

	if err := holder.Unlock(j.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
	j.waitJS("the waiter's row to leave", `() => document.querySelectorAll("[data-testid=waiter-row]").length === 0 &&
		!document.querySelector("[data-testid=waiters-empty]").hidden`, nil, 10*time.Second)
	if total := j.text(`[data-testid=waiters-total]`); total != "0" {
		t.Errorf("waiters total %q after the hand-off, want 0", total)
	}
	// The list counts waiters per lock too.
	j.open("/locks?sort=waiters")
	if n := j.text(`[data-testid=lock-row][data-lock="` + name + `"] [data-testid=lock-waiters]`); n != "0" {
		t.Errorf("list shows %s waiters, want 0", n)
	}
}

// Journey: two services deadlock. Each holds one lock (listed first) and
// then waits for the other's; the overview's banner comes up in the first
// frame within 2 s (Redis time) of the second wait, /deadlocks draws the
// cycle, and breaking the suggested hold through the usual confirmation
// lets both services finish.
func TestJourneyDeadlockBrokenFromConsole(t *testing.T) {
	j := newJourney(t)
	l1, l2 := "billing:lock:invoice", "shipping:lock:parcel"
	a := store.New(j.rdb, &store.Options{App: "billing"})
	b := store.New(j.rdb, &store.Options{App: "shipping"})
	aHolds, aWants := a.NewLock(l1, &store.LockOptions{Owner: "t1"}), a.NewLock(l2, &store.LockOptions{Owner: "t1"})
	bHolds, bWants := b.NewLock(l2, &store.LockOptions{Owner: "t2"}), b.NewLock(l1, &store.LockOptions{Owner: "t2"})
	if err := aHolds.Lock(j.ctx); err != nil {
		t.Fatal(err)
	}
	taken := j.redisNowMS()
	redistest.Eventually(t, "Redis time past billing's hold", func() bool { return j.redisNowMS() > taken })
	if err := bHolds.Lock(j.ctx); err != nil {
		t.Fatal(err)
	}
	j.unlockAtEnd(aWants, aHolds, bWants, bHolds)
	j.wrote(l1, "locks")
	j.wrote(l2, "locks")
	j.listed()

	j.open("/")
	j.waitLive(2)
	if !j.hidden(`[data-testid=deadlock-banner]`) {
		t.Fatal("deadlock banner shown before any deadlock")
	}
	// The first frame that counts a cycle, in Redis time.
	j.eval(`() => { window.lockwarden.statsHandlers.push(f => {
		if (f.deadlocks > 0 && window.__deadlockAt === undefined) window.__deadlockAt = f.at;
	}); }`, nil)
	aDone, bDone := lockAsync(j.ctx, aWants), lockAsync(j.ctx, bWants)
	j.waitJS("the deadlock banner", `() => !document.querySelector("[data-testid=deadlock-banner]").hidden`, nil, 15*time.Second)
	formed := j.lastQueued(l1, l2)
	at, err := strconv.ParseInt(j.evalString(`() => String(window.__deadlockAt)`, nil), 10, 64)
	if err != nil {
		t.Fatalf("the first frame with the deadlock: %v", err)
	}
	if at-formed > 2000 {
		t.Errorf("the first frame with the deadlock is at %d, %d ms after the second wait queued (want within 2 s)", at, at-formed)
	}
	alert := j.text(`[data-testid=alert][data-rule="lock-deadlock"]`)
	for _, s := range []string{l1, l2, "billing", "shipping"} {
		if !strings.Contains(alert, s) {
			t.Errorf("the deadlock alert %q does not name %s", alert, s)
		}
	}

	j.clickTo(`[data-testid=deadlock-banner-link]`)
	if n := j.count(`[data-testid=deadlock-svg] [data-testid=cycle-edge]`); n != 4 {
		t.Errorf("the drawing has %d arrows, want 4", n)
	}
	step := `[data-testid=deadlock-step][data-youngest=true]`
	if got := j.text(step + ` [data-testid=deadlock-holder]`); got != bHolds.HolderID() {
		t.Fatalf("suggested breaking %q, want shipping's younger hold %s", got, bHolds.HolderID())
	}
	j.clickTo(step + ` [data-testid=deadlock-break]`)
	if got := j.text(`[data-testid=confirm-holder]`); got != bHolds.HolderID() {
		t.Errorf("confirmation names holder %q", got)
	}
	j.fill(`[data-testid=force-unlock-reason]`, "e2e: billing and shipping deadlocked")
	// Billing queued no later than formed and is granted only by the
	// break, after this click: its wait is at least the time between.
	minWaitMS := time.Now().UnixMilli() - formed
	j.clickTo(`[data-testid=force-unlock-confirm]`)

	// Billing gets the parcel lock, finishes and lets both go; then
	// shipping gets the invoice lock.
	if err := <-aDone; err != nil {
		t.Fatalf("billing's wait: %v", err)
	}
	for _, lk := range []*store.Lock{aWants, aHolds} {
		if err := lk.Unlock(j.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-bDone; err != nil {
		t.Fatalf("shipping's wait: %v", err)
	}
	if err := bWants.Unlock(j.ctx); err != nil {
		t.Fatal(err)
	}
	j.open("/")
	if !j.hidden(`[data-testid=deadlock-banner]`) {
		t.Error("the deadlock banner is still up after the cycle was broken")
	}

	// Both locks are free now; what happened to them is not forgotten:
	// billing's wait for the parcel lock, granted by hand-off at the
	// break, and the deadlock with how long it lasted.
	var parcel struct {
		State   string `json:"state"`
		Windows []struct {
			Contended int64 `json:"contended"`
			MaxMS     int64 `json:"max_ms"`
		} `json:"wait_windows"`
		PastDeadlocks []struct {
			Since time.Time `json:"since"`
			Ended time.Time `json:"ended"`
		} `json:"past_deadlocks"`
	}
	redistest.Eventually(t, "the parcel lock free, its wait and deadlock kept", func() bool {
		j.apiJSON("/api/locks/"+url.PathEscape(l2), &parcel)
		return parcel.State == "free" && len(parcel.Windows) == 3 && parcel.Windows[2].Contended > 0
	})
	if len(parcel.PastDeadlocks) != 1 || !parcel.PastDeadlocks[0].Ended.After(parcel.PastDeadlocks[0].Since) {
		t.Errorf("past deadlocks of the parcel lock: %+v, want the one broken", parcel.PastDeadlocks)
	}
	if w := parcel.Windows[2]; w.Contended != 1 || w.MaxMS < minWaitMS-1 {
		t.Errorf("the parcel lock's minute of waits: %+v, want billing's one wait of at least %d ms", w, minWaitMS)
	}
	j.open("/locks/" + url.PathEscape(l2))
	if !strings.Contains(j.text(`[data-testid=why-answer]`), "deadlock") {
		t.Errorf("the free lock's page does not say it was deadlocked: %q", j.text(`[data-testid=why-answer]`))
	}
}

// lastQueued is the Redis time (ms) the later of the locks' current
// waiters queued (store's hand-off queue scores arrivals).
func (j *journey) lastQueued(names ...string) int64 {
	j.t.Helper()
	var last int64
	for _, n := range names {
		l, err := inspect.New(j.rdb, nil).GetLock(j.ctx, n)
		if err != nil || len(l.Waiters) == 0 {
			j.t.Fatalf("waiters of %s: %+v %v", n, l, err)
		}
		for _, w := range l.Waiters {
			last = max(last, w.ArrivedMS)
		}
	}
	return last
}

// registered waits until the console knows c from the client registry
// (read once a second), as it knows a service that has been running.
func (j *journey) registered(c *store.Client) {
	j.t.Helper()
	redistest.Eventually(j.t, "the console knows client "+c.ID(), func() bool {
		var body struct {
			Clients []struct {
				ID         string
				Registered bool
			}
		}
		j.apiJSON("/api/clients", &body)
		for _, cl := range body.Clients {
			if cl.ID == c.ID() && cl.Registered {
				return true
			}
		}
		return false
	})
}

// hidden reports whether the first element matching sel is hidden.
func (j *journey) hidden(sel string) bool {
	j.t.Helper()
	return j.eval(`sel => document.querySelector(sel).hidden`, sel) == true
}
