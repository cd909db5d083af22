package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
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

// holders is how many holders the console's latest tick saw hold lock
// name (the lease detector follows the ticks, not single reads).
func (e *testEnv) holders(name string) int {
	e.t.Helper()
	sn := e.srv.live.Latest()
	for i := range sn.Locks {
		if sn.Locks[i].Name == name {
			return len(sn.Locks[i].Holders)
		}
	}
	return 0
}

// leaseViolations waits until the console lists a violation of lock
// name, and returns them.
func (e *testEnv) leaseViolations(name string) []live.LeaseViolation {
	e.t.Helper()
	var vs []live.LeaseViolation
	redistest.Eventually(e.t, "a violation of "+name+" on /api/lease-violations", func() bool {
		var out struct {
			Violations []live.LeaseViolation `json:"violations"`
		}
		e.getJSON("/api/lease-violations?lock="+esc(name), 200, &out)
		vs = out.Violations
		return len(vs) > 0
	})
	return vs
}

// A renewal that arrives after its holder released the lock (a watchdog
// that outlived the unlock) is told apart from a late release: the hold
// was released, not lost.
func TestLeaseRenewedAfterRelease(t *testing.T) {
	e := newEnv(t, fastTicks)
	name := e.prefix + "report"
	ctx := t.Context()
	a := store.New(e.rdb, &store.Options{App: "reports"})
	t.Cleanup(func() { _ = a.Close() })
	l := a.NewLock(name, &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the console to see the holder", func() bool {
		return e.holders(name) == 1
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// The release is settled once its unlock message had time to arrive
	// (a few ticks); the renewal comes after.
	time.Sleep(time.Second)
	if err := l.Refresh(ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Fatalf("Refresh after Unlock = %v, want ErrNotHeld", err)
	}
	vs := e.leaseViolations(name)
	if len(vs) != 1 || vs[0].Kind != live.ViolationRenewedAfterRelease || vs[0].Holder != l.HolderID() ||
		vs[0].Client == nil || vs[0].Client.App != "reports" || vs[0].Probable || vs[0].LateMS < 500 {
		t.Fatalf("violations %+v: want reports' renewal after its release, about 1 s late", vs)
	}
}

// A holder that registered no client (a token lock of another library)
// whose lease ran out while another took the lock is reported as
// probable, with the reason: the console cannot know it still worked.
func TestLeaseForeignHolderProbable(t *testing.T) {
	e := newEnv(t, fastTicks)
	name := e.prefix + "import"
	ctx := t.Context()
	app := store.New(e.rdb, &store.Options{App: "importer"}) // announces the name; its token is no client id
	t.Cleanup(func() { _ = app.Close() })
	first := app.NewTokenLock(name, &store.LockOptions{NoWatchdog: true, Lease: 600 * time.Millisecond})
	if err := first.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the console to see the token's holder", func() bool {
		return e.holders(name) == 1
	})
	second := app.NewTokenLock(name, &store.LockOptions{NoWatchdog: true, Lease: time.Minute})
	if err := second.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Unlock(context.Background()) })
	vs := e.leaseViolations(name)
	v := vs[0]
	if len(vs) != 1 || v.Kind != live.ViolationExpiredWhileWorking || v.Holder != first.HolderID() || v.Client != nil ||
		v.NextHolder != second.HolderID() || !v.Probable || !strings.Contains(v.Reason, "not a registered store client") {
		t.Fatalf("violations %+v: want the token's expiry, probable, with its reason", vs)
	}
}

// A held lock whose key Redis evicts (maxmemory, volatile-ttl: the key
// nearest its expiry goes first, the lock's lease before the filler's
// hour and the history's retention) is reported evicted, with its holder,
// and its hold's end in the history says so.
func TestLeaseEvicted(t *testing.T) {
	srv := redistest.StartT(t, "--maxmemory", "8mb", "--maxmemory-policy", "volatile-ttl",
		"--notify-keyspace-events", "Eghxe")
	rdb := redistest.NewClient(t, srv)
	e := newEnvOn(t, rdb, func(c *Config) { fastTicks(c); c.TickInterval = inspect.BucketMS / 2 * time.Millisecond })
	name := e.prefix + "cache-fill"
	ctx := t.Context()
	a := store.New(e.rdb, &store.Options{App: "filler"})
	t.Cleanup(func() { _ = a.Close() })
	l := a.NewLock(name, &store.LockOptions{NoWatchdog: true, Lease: 20 * time.Second})
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, "the history to keep the running hold", func() bool {
		flushHistory(t, e.srv)
		var lh history.LockHistory
		st, _, b := e.do("GET", "/api/locks/"+esc(name)+"/history?span=1h", nil, nil)
		return st == 200 && json.Unmarshal(b, &lh) == nil && len(lh.Holds) == 1 && lh.Holds[0].To.IsZero()
	})
	// Fill memory until Redis evicts the lock's key: bounded in count.
	// The filler is outside the console's match.
	value := strings.Repeat("x", 16<<10)
	var fill []string
	evicted := false
	for i := 0; i < 4000 && !evicted; i += 20 {
		pipe := rdb.Pipeline()
		for j := i; j < i+20; j++ {
			k := "fill:" + e.prefix + strconv.Itoa(j)
			fill = append(fill, k)
			pipe.Set(ctx, k, value, time.Hour)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		n, err := rdb.Exists(ctx, name).Result()
		if err != nil {
			t.Fatal(err)
		}
		evicted = n == 0
	}
	if !evicted {
		t.Fatal("4,000 writes of 16 KiB under an 8 MB limit did not evict the lock")
	}
	// Room again, so the console's own writes evict nothing more.
	for len(fill) > 0 {
		n := min(len(fill), 500)
		if err := rdb.Unlink(ctx, fill[:n]...).Err(); err != nil {
			t.Fatal(err)
		}
		fill = fill[n:]
	}
	vs := e.leaseViolations(name)
	if v := vs[0]; len(vs) != 1 || v.Kind != live.ViolationEvicted || v.Holder != l.HolderID() || v.Probable || v.At.IsZero() {
		t.Fatalf("violations %+v: want filler's hold evicted", vs)
	}
	var last []byte
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the history last answered %s; its stats %+v", last, e.srv.hist.History().Stats())
		}
	})
	redistest.Eventually(t, "the hold's end in the history: evicted", func() bool {
		flushHistory(t, e.srv)
		var lh history.LockHistory
		st, _, b := e.do("GET", "/api/locks/"+esc(name)+"/history?span=1h", nil, nil)
		last = b
		return st == 200 && json.Unmarshal(b, &lh) == nil && len(lh.Holds) == 1 &&
			lh.Holds[0].Holder == l.HolderID() && lh.Holds[0].Ended == history.EndEvicted
	})
	redistest.Eventually(t, "why to say the last hold was evicted", func() bool {
		st, _, b := e.do("GET", "/api/why/"+esc(name), nil, nil)
		return st == 200 && strings.Contains(string(b), "Redis evicted its key")
	})
}
