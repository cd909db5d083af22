package web

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// deadlockPair is two applications' store clients that deadlock on two
// locks: A holds l1 and waits for l2, B holds l2 and waits for l1.
type deadlockPair struct {
	a, b           *store.Client
	l1, l2         string
	aHolds, aWants *store.Lock
	bHolds, bWants *store.Lock
	aDone, bDone   chan error
}

// deadlock starts the pair under prefix. On a Cluster l1 and l2 are on
// different masters.
func deadlock(t *testing.T, prefix string) *deadlockPair {
	t.Helper()
	p := &deadlockPair{a: store.New(redistest.Universal(t), &store.Options{App: "billing"}),
		b: store.New(redistest.Universal(t), &store.Options{App: "shipping"})}
	t.Cleanup(func() { p.a.Close(); p.b.Close() })
	p.l1, p.l2 = prefix+"{dl0}:invoice", prefix+"{dl0}:parcel"
	if cc, ok := redistest.Universal(t).(*redis.ClusterClient); ok {
		first, err := cc.MasterForKey(t.Context(), p.l1)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; ; i++ {
			p.l2 = fmt.Sprintf("%s{dl%d}:parcel", prefix, i)
			if n, err := cc.MasterForKey(t.Context(), p.l2); err != nil || n.Options().Addr != first.Options().Addr {
				break
			}
		}
	}
	p.aHolds, p.aWants = p.a.NewLock(p.l1, &store.LockOptions{Owner: "a"}), p.a.NewLock(p.l2, &store.LockOptions{Owner: "a"})
	p.bHolds, p.bWants = p.b.NewLock(p.l2, &store.LockOptions{Owner: "b"}), p.b.NewLock(p.l1, &store.LockOptions{Owner: "b"})
	ctx := t.Context()
	if err := p.aHolds.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// B's hold is the younger one, so the suggestion is known: hold times
	// are in Redis milliseconds.
	rdb := redistest.Universal(t)
	taken := redistest.NowMS(t, rdb)
	redistest.Eventually(t, "Redis time past A's acquisition", func() bool { return redistest.NowMS(t, rdb) > taken })
	if err := p.bHolds.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	p.aDone, p.bDone = make(chan error, 1), make(chan error, 1)
	go func() { p.aDone <- p.aWants.Lock(ctx) }()
	go func() { p.bDone <- p.bWants.Lock(ctx) }()
	return p
}

// finish waits for both Lock calls once the cycle is broken at l2 (B's
// hold): A gets l2, lets both go, then B gets l1.
func (p *deadlockPair) finish(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	if err := <-p.aDone; err != nil {
		t.Fatalf("A's wait: %v", err)
	}
	for _, lk := range []*store.Lock{p.aWants, p.aHolds} {
		if err := lk.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-p.bDone; err != nil {
		t.Fatalf("B's wait: %v", err)
	}
	if err := p.bWants.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

type apiDeadlocks struct {
	Deadlocks []struct {
		Since time.Time              `json:"since"`
		Cycle []inspect.DeadlockStep `json:"cycle"`
	} `json:"deadlocks"`
}

type apiWaitedLock struct {
	Name         string           `json:"name"`
	Waiters      []inspect.Waiter `json:"waiters"`
	WaitersTotal int64            `json:"waiters_total"`
}

// A deadlock between two store clients shows in /api/deadlocks with both
// holders' identities, fires lock-deadlock naming locks, holders and
// apps, gives each lock its waiter in GET and the list; a holder-checked
// force-unlock of the suggested hold breaks it at once and both clients
// finish.
func TestAPIDeadlocks(t *testing.T) {
	e := newEnv(t, nil)
	var none apiDeadlocks
	e.getJSON("/api/deadlocks", 200, &none)
	if none.Deadlocks == nil || len(none.Deadlocks) != 0 {
		t.Fatalf("no deadlock yet: got %+v, want an empty list", none)
	}
	p := deadlock(t, e.prefix)
	var got apiDeadlocks
	eventually(t, 15*time.Second, "the deadlock with both identities", func() bool {
		e.getJSON("/api/deadlocks", 200, &got)
		if len(got.Deadlocks) != 1 {
			return false
		}
		for _, s := range got.Deadlocks[0].Cycle {
			if s.Client == nil {
				return false
			}
		}
		return true
	})
	d := got.Deadlocks[0]
	if d.Since.IsZero() || len(d.Cycle) != 2 {
		t.Fatalf("deadlock %+v", d)
	}
	want := map[string]struct{ holder, waitsFor, app string }{
		p.l1: {p.aHolds.HolderID(), p.l2, "billing"},
		p.l2: {p.bHolds.HolderID(), p.l1, "shipping"},
	}
	var youngest inspect.DeadlockStep
	for _, s := range d.Cycle {
		w := want[s.Lock]
		if s.Holder != w.holder || s.WaitsFor != w.waitsFor || s.Client.App != w.app {
			t.Errorf("step %+v (client %+v), want %s holding it and waiting for %s", s, s.Client, w.app, w.waitsFor)
		}
		if s.Youngest {
			youngest = s
		}
	}
	if youngest.Lock != p.l2 {
		t.Fatalf("suggested %q, want %q: taken last", youngest.Lock, p.l2)
	}

	// The alerts are evaluated after each tick's snapshot: the one that
	// fired may be a tick older than the deadlock read above, from before
	// the registry named both clients; the next evaluation names them.
	names := []string{p.l1, p.l2, p.aHolds.HolderID(), p.bHolds.HolderID(), "billing", "shipping"}
	var alerts alertsJSON
	var fired *Alert
	eventually(t, 15*time.Second, "the deadlock alert naming both locks, holders and services", func() bool {
		e.getJSON("/api/alerts", 200, &alerts)
		fired = nil
		for i := range alerts.Alerts {
			if alerts.Alerts[i].Rule == RuleLockDeadlock {
				fired = &alerts.Alerts[i]
			}
		}
		return fired != nil && !slices.ContainsFunc(names, func(s string) bool { return !strings.Contains(fired.Message, s) })
	})
	if fired.Severity != "critical" {
		t.Errorf("alert %+v, want critical", *fired)
	}

	var l1 apiWaitedLock
	e.getJSON("/api/locks/"+esc(p.l1), 200, &l1)
	if l1.WaitersTotal != 1 || len(l1.Waiters) != 1 {
		t.Fatalf("%s: waiters %+v (total %d), want B", p.l1, l1.Waiters, l1.WaitersTotal)
	}
	w := l1.Waiters[0]
	if w.Owner != p.bWants.HolderID() || w.Position != 1 || w.Client == nil || w.Client.App != "shipping" ||
		w.WaitingMS == nil || w.DeadlineMS <= 0 {
		t.Errorf("waiter %+v (client %+v), want B's owner, first, with identity, wait and deadline", w, w.Client)
	}
	_, _, metrics := e.do("GET", "/metrics", nil, nil)
	if want := `lockwarden_lock_waiters{name="` + p.l1 + `"} 1`; !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics has no %s", want)
	}
	var list struct{ Locks []apiWaitedLock }
	e.getJSON("/api/locks", 200, &list)
	for _, l := range list.Locks {
		if (l.Name == p.l1 || l.Name == p.l2) && l.WaitersTotal != 1 {
			t.Errorf("list row %s: waiters_total %d, want 1", l.Name, l.WaitersTotal)
		}
	}

	e.checkDeadlockPages(p, youngest)

	var ok map[string]bool
	e.sendJSON("POST", "/api/locks/"+esc(youngest.Lock)+"/force-unlock",
		`{"holder":"`+youngest.Holder+`","reason":"deadlock"}`, 200, &ok)
	// Read-your-writes: the cycle is gone from the next answer.
	e.getJSON("/api/deadlocks", 200, &got)
	if len(got.Deadlocks) != 0 {
		t.Errorf("after the force-unlock: %+v", got.Deadlocks)
	}
	p.finish(t)
	eventually(t, 10*time.Second, "lock-deadlock resolved", func() bool {
		e.getJSON("/api/alerts", 200, &alerts)
		for _, a := range alerts.Alerts {
			if a.Rule == RuleLockDeadlock {
				return false
			}
		}
		return true
	})
	// The broken cycle stays on both locks' pages: when, for how long, and
	// who held which lock waiting for the other.
	for _, lock := range []string{p.l1, p.l2} {
		var past *goquery.Selection
		eventually(t, 10*time.Second, lock+"'s page to list the deadlock it was part of", func() bool {
			_, _, body := e.do("GET", "/locks/"+esc(lock), nil, nil)
			past = parseHTML(t, body).Find(`[data-testid="past-deadlock"]`)
			return past.Length() == 1
		})
		steps := past.Find(`[data-testid="past-deadlock-step"]`)
		if steps.Length() != 2 || !strings.Contains(past.Text(), "billing") || !strings.Contains(past.Text(), "shipping") ||
			past.Find("time").Length() != 2 {
			t.Errorf("%s's past deadlock: %q", lock, past.Text())
		}
	}
}

// checkDeadlockPages: /deadlocks draws the cycle (two locks, two holders,
// four arrows) and offers a holder-checked force-unlock per step, the
// youngest suggested; each lock's page shows the cycle and its waiter
// with identity; the banner is up.
func (e *testEnv) checkDeadlockPages(p *deadlockPair, youngest inspect.DeadlockStep) {
	t := e.t
	t.Helper()
	st, _, body := e.do("GET", "/deadlocks", nil, nil)
	if st != 200 {
		t.Fatalf("/deadlocks: status %d", st)
	}
	doc := parseHTML(t, body)
	if n := doc.Find(`[data-testid="deadlock"]`).Length(); n != 1 {
		t.Fatalf("/deadlocks shows %d cycles, want 1", n)
	}
	svg := doc.Find(`svg[data-testid="deadlock-svg"]`)
	if svg.Find(`[data-testid="cycle-lock"]`).Length() != 2 || svg.Find(`[data-testid="cycle-holder"]`).Length() != 2 ||
		svg.Find(`[data-testid="cycle-edge"]`).Length() != 4 {
		t.Errorf("cycle drawing: %s", svg.Text())
	}
	for _, app := range []string{"billing", "shipping"} {
		if !strings.Contains(svg.Text(), app) {
			t.Errorf("the drawing does not name %s: %s", app, svg.Text())
		}
	}
	forms := doc.Find(`[data-testid="deadlock-break-form"]`)
	if forms.Length() != 2 {
		t.Errorf("%d force-unlock forms, want one per step", forms.Length())
	}
	sug := doc.Find(`[data-testid="deadlock-step"][data-youngest="true"]`)
	if sug.Length() != 1 || sug.AttrOr("data-lock", "") != youngest.Lock ||
		sug.Find(`input[name="holder"]`).AttrOr("value", "") != youngest.Holder ||
		!strings.Contains(sug.Find(`[data-testid="deadlock-break"]`).Text(), "suggested") {
		t.Errorf("suggested step: %s", sug.Text())
	}
	if doc.Find(`[data-testid="deadlock-banner"]`).AttrOr("hidden", "none") != "none" {
		t.Error("the deadlock banner is hidden while a cycle exists")
	}
	_, _, body = e.do("GET", "/locks/"+esc(p.l1), nil, nil)
	doc = parseHTML(t, body)
	if doc.Find(`[data-testid="lock-detail"] [data-testid="deadlock"]`).Length() != 1 {
		t.Errorf("%s's page does not show its cycle", p.l1)
	}
	row := doc.Find(`[data-testid="waiter-row"]`)
	if row.Length() != 1 || row.Find(`[data-testid="waiter-owner"]`).Text() != p.bWants.HolderID() ||
		!strings.Contains(row.Find(`[data-testid="waiter-who"]`).Text(), "shipping") {
		t.Errorf("%s's waiters table: %s", p.l1, row.Text())
	}
}

// A held Redisson lock's waiters, only countable, show as its channel's
// subscribers in GET and on its page, in the words the console uses.
func TestAPISubscribers(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "java:lock"
	e.makeLock(name, "73", 1, time.Minute)
	for range 2 {
		rdb := redistest.Universal(t)
		var ps *redis.PubSub
		if redistest.SharedCluster() != nil {
			ps = rdb.SSubscribe(t.Context(), redistest.UnlockChannel(name))
		} else {
			ps = rdb.Subscribe(t.Context(), redistest.UnlockChannel(name))
		}
		t.Cleanup(func() { ps.Close() })
		if _, err := ps.Receive(t.Context()); err != nil {
			t.Skipf("subscribing as Redisson does: %v", err)
		}
	}
	var l struct {
		Subscribers *int64 `json:"subscribers"`
	}
	// A tick that read the channel between the two subscriptions may
	// answer first: wait for the count to reach both.
	eventually(t, 15*time.Second, "the lock's two subscribers", func() bool {
		e.getJSON("/api/locks/"+esc(name), 200, &l)
		return l.Subscribers != nil && *l.Subscribers == 2
	})
	_, _, body := e.do("GET", "/locks/"+esc(name), nil, nil)
	if got := parseHTML(t, body).Find(`[data-testid="lock-subscribers"]`).Text(); got != "2 Redisson clients subscribed (threads not visible)" {
		t.Errorf("lock page says %q", got)
	}
}
