package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/alert"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/live"
)

// webhookPosts is a receiver of the console's alert webhook.
func webhookPosts(t *testing.T) (string, <-chan alert.Payload) {
	posts := make(chan alert.Payload, 64)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p alert.Payload
		if json.NewDecoder(r.Body).Decode(&p) == nil {
			select {
			case posts <- p:
			default:
			}
		}
	}))
	t.Cleanup(rcv.Close)
	return rcv.URL, posts
}

// A holder on a fixed 1 s lease works on for 3 s while another client
// takes the lock: its handle says so at about 1 s, and the console lists
// the expiry while it worked, then its late release, with both
// identities; the alert fires (webhook included), /metrics counts them
// and the history says the first hold expired.
func TestLeaseLostWhileWorking(t *testing.T) {
	hook, posts := webhookPosts(t)
	e := newHistoryEnv(t, func(c *Config) { c.Alerts = AlertConfig{Webhook: hook} })
	name := e.prefix + "ledger"
	ctx := t.Context()
	a := store.New(e.rdb, &store.Options{App: "billing"})
	b := store.New(e.rdb, &store.Options{App: "shipping"})
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	first := a.NewLock(name, &store.LockOptions{NoWatchdog: true, Lease: time.Second})
	second := b.NewLock(name, nil)
	sent := time.Now()
	if err := first.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	lost := first.Lost()
	got := make(chan error, 1)
	go func() { got <- second.Lock(ctx) }()
	t.Cleanup(func() { _ = second.Unlock(context.Background()) })

	select { // the work: 3 s, or until the handle says the hold is lost
	case <-lost:
	case <-time.After(3 * time.Second):
		t.Fatal("Lost() did not close within the work's 3 s")
	}
	if d := time.Since(sent); d < time.Second {
		t.Fatalf("Lost() closed %v after the grant was sent, before its 1 s lease ran out", d)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(sent.Add(3 * time.Second))) // the holder works on regardless
	if err := first.Unlock(ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("late Unlock = %v, want ErrNotHeld", err)
	}

	var vs []live.LeaseViolation
	redistest.Eventually(t, "both violations on /api/lease-violations", func() bool {
		var out struct {
			Violations []live.LeaseViolation `json:"violations"`
		}
		e.getJSON("/api/lease-violations?lock="+esc(name), 200, &out)
		vs = out.Violations
		return len(vs) >= 2
	})
	if len(vs) != 2 || vs[0].Kind != live.ViolationExpiredWhileWorking || vs[1].Kind != live.ViolationReleasedAfterExpiry {
		t.Fatalf("violations %+v: want expired-while-working, then released-after-expiry", vs)
	}
	for _, v := range vs {
		if v.Lock != name || v.Holder != first.HolderID() || v.Client == nil || v.Client.App != "billing" ||
			v.NextHolder != second.HolderID() || v.NextClient == nil || v.NextClient.App != "shipping" || v.Probable || v.At.IsZero() {
			t.Errorf("violation %+v (client %+v, next %+v): want billing's hold, then shipping's", v, v.Client, v.NextClient)
		}
	}
	if vs[1].LateMS < 1000 || vs[1].LateMS > 3000 {
		t.Errorf("late release %d ms after the end, want about 2 s", vs[1].LateMS)
	}

	var fired alert.Alert
	redistest.Eventually(t, "lock-lease-lost in /api/alerts", func() bool {
		var out alertsJSON
		e.getJSON("/api/alerts", 200, &out)
		for _, al := range out.Alerts {
			if al.Rule == RuleLockLeaseLost && al.Name == name {
				fired = al
				return true
			}
		}
		return false
	})
	if fired.Severity != "critical" || !strings.Contains(fired.Message, "billing") || !strings.Contains(fired.Message, "shipping") {
		t.Errorf("alert %+v: want critical, naming both clients", fired)
	}
	redistest.Eventually(t, "the webhook hears lock-lease-lost", func() bool {
		select {
		case p := <-posts:
			for _, al := range p.Alerts {
				if al.Labels["alertname"] == RuleLockLeaseLost && al.Labels["name"] == name && p.Status == "firing" {
					return true
				}
			}
		default:
		}
		return false
	})
	_, _, m := e.do("GET", "/metrics", nil, nil)
	for _, want := range []string{`lockwarden_lease_violations_total{kind="expired-while-working"} 1`,
		`lockwarden_lease_violations_total{kind="released-after-expiry"} 1`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if _, _, page := e.do("GET", "/locks/"+esc(name), nil, nil); !strings.Contains(string(page), `data-testid="lease-violations"`) ||
		!strings.Contains(string(page), live.ViolationExpiredWhileWorking) {
		t.Error("the lock's page does not show its violations")
	}

	// The history: the first hold expired at its lease's end, and its
	// holder worked on under it until the late release, over the second
	// hold: the overlap the timeline paints red.
	var hold, next history.Hold
	var lh lockHistoryOut
	redistest.Eventually(t, "the first hold in the history, worked on to its late release", func() bool {
		flushHistory(t, e.srv)
		e.getJSON("/api/locks/"+esc(name)+"/history?span=1h", 200, &lh)
		for _, h := range lh.Holds {
			switch h.Holder {
			case first.HolderID():
				hold = h
			case second.HolderID():
				next = h
			}
		}
		return hold.Ended != "" && !hold.WorkedTo.IsZero()
	})
	if hold.Ended != history.EndExpired {
		t.Errorf("the first hold ended %q, want %q", hold.Ended, history.EndExpired)
	}
	if d := hold.WorkedTo.Sub(hold.To); d < time.Second || d > 3*time.Second {
		t.Errorf("the first hold ran %v to %v, worked to %v: want its holder heard about 2 s past its end", hold.From, hold.To, hold.WorkedTo)
	}
	if next.From.IsZero() || !next.From.Before(hold.WorkedTo) || !hold.From.Before(next.From) {
		t.Errorf("the second hold %+v does not begin within the first's worked span %v-%v", next, hold.From, hold.WorkedTo)
	}
	if !strings.Contains(lh.Summary, "1 overlap: two holders at once.") {
		t.Errorf("timeline summary %q: want the overlap of the late holder with the next", lh.Summary)
	}
}

// Two readers share a read-write lock by design: the history keeps each
// hold's mode and the timeline counts no overlap between them, while a
// writer after them is a hold of its own.
func TestLeaseReadersShareWithoutOverlap(t *testing.T) {
	e := newHistoryEnv(t)
	name := e.prefix + "catalog"
	ctx := t.Context()
	a := store.New(e.rdb, &store.Options{App: "reader-a"})
	b := store.New(e.rdb, &store.Options{App: "reader-b"})
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	ra, rb := a.NewRWLock(name, nil).Reader(), b.NewRWLock(name, nil).Reader()
	for _, r := range []*store.RWLockSide{ra, rb} {
		if err := r.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	redistest.Eventually(t, "the console to see both readers", func() bool {
		var out struct {
			Holders []struct{ ID string } `json:"holders"`
		}
		e.getJSON("/api/locks/"+esc(name), 200, &out)
		return len(out.Holders) == 2
	})
	time.Sleep(400 * time.Millisecond) // shared over a few samples
	for _, r := range []*store.RWLockSide{ra, rb} {
		if err := r.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var lh lockHistoryOut
	redistest.Eventually(t, "both read holds ended in the history", func() bool {
		flushHistory(t, e.srv)
		e.getJSON("/api/locks/"+esc(name)+"/history?span=1h", 200, &lh)
		n := 0
		for _, h := range lh.Holds {
			if h.Ended != "" {
				n++
			}
		}
		return n == 2
	})
	for _, h := range lh.Holds {
		if h.Mode != history.ModeRead {
			t.Errorf("hold %+v: want mode read", h)
		}
	}
	if strings.Contains(lh.Summary, "overlap") {
		t.Errorf("summary %q: two readers sharing the lock counted as an overlap", lh.Summary)
	}
}

// lockHistoryOut is GET /api/locks/{name}/history's answer.
type lockHistoryOut struct {
	history.LockHistory
	Summary string `json:"summary"`
}
