package web

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/history"
)

// contend makes two applications' store.Clients take the lock at name in
// turn, the second waiting in the lock's queue until the first lets go:
// two acquisitions, one contended. The second keeps it until the test
// ends: the console reads the waits of the locks it knows, and a lock
// nobody holds has no key to be known by.
func (e *testEnv) contend(name string) {
	e.t.Helper()
	ctx := e.t.Context()
	a := store.New(e.rdb, &store.Options{App: "billing"})
	b := store.New(e.rdb, &store.Options{App: "shipping"})
	e.t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	holder, waiter := a.NewLock(name, nil), b.NewLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.synced()
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	eventually(e.t, 5*time.Second, "the waiter queues", func() bool {
		return e.rdb.Exists(ctx, redistest.LockQueueKey(name)).Val() == 1
	})
	if err := holder.Unlock(ctx); err != nil {
		e.t.Fatal(err)
	}
	if err := <-done; err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = waiter.Unlock(context.WithoutCancel(ctx)) })
}

// A lock two store clients contend for has its waits in its history, per
// minute, and a replica answers the same; its timeline draws them and the
// overview counts it among the most contended.
func TestHistoryLockWaitAPI(t *testing.T) {
	e := newHistoryEnv(t)
	busy := e.prefix + "busy"
	e.contend(busy)

	var lh history.LockHistory
	var sum history.WaitPoint
	eventually(t, 20*time.Second, "the contended acquisition in the history", func() bool {
		flushHistory(t, e.srv)
		// Until the history keeps it, a lock nobody holds is unknown (404).
		if st, _, b := e.do("GET", "/api/locks/"+esc(busy)+"/history?span=1h", nil, nil); st != 200 {
			return false
		} else if err := json.Unmarshal(b, &lh); err != nil {
			t.Fatal(err)
		}
		sum = history.WaitPoint{}
		for _, p := range lh.Wait {
			sum.Acquired += p.Acquired
			sum.Contended += p.Contended
			sum.MaxMS = max(sum.MaxMS, p.MaxMS)
			sum.P99MS = max(sum.P99MS, p.P99MS)
		}
		return sum.Contended > 0 && sum.Acquired >= 2
	})
	if sum.Acquired != 2 || sum.Contended != 1 || sum.P99MS > sum.MaxMS {
		t.Errorf("waits %+v, sum %+v: want 2 acquisitions, 1 contended", lh.Wait, sum)
	}
	for _, p := range lh.Wait {
		if p.T%60 != 0 || p.Acquired == 0 {
			t.Errorf("point %+v: want minutes with acquisitions only", p)
		}
	}
	var day history.LockHistory
	e.getJSON("/api/locks/"+esc(busy)+"/history?span=24h", 200, &day)
	if len(day.Wait) != len(lh.Wait) || day.Wait[0] != lh.Wait[0] {
		t.Errorf("24h waits %+v, 1h %+v: want the same minutes", day.Wait, lh.Wait)
	}
	other := e.second()
	p := "/api/locks/" + esc(busy) + "/history?span=24h"
	eventually(t, 20*time.Second, "the same answer from both consoles", func() bool {
		a, ok := e.sameHistory(other, p)
		return ok && bytes.Contains(a, []byte(`"contended":1`))
	})

	// The lock's timeline shows the wait beneath its holders; the overview
	// has the lock among the most contended.
	st, _, b := e.do("GET", views.LockURL(busy)+"?span=24h", nil, nil)
	if st != 200 {
		t.Fatalf("lock page: %d", st)
	}
	doc := parseHTML(t, b)
	if sum := doc.Find(`[data-testid="lock-timeline"] [data-testid="chart-summary"]`).Text(); !strings.Contains(sum, "Waits: 1 of ") {
		t.Errorf("lock page: timeline summary %q, want the contended acquisition", sum)
	}
	var api struct {
		Wait    []history.WaitPoint `json:"wait"`
		Summary string              `json:"summary"`
	}
	e.getJSON(p, 200, &api)
	if len(api.Wait) != len(day.Wait) || !strings.Contains(api.Summary, "Waits: 1 of ") {
		t.Errorf("%s: %d minutes, summary %q; want %d and the contended acquisition", p, len(api.Wait), api.Summary, len(day.Wait))
	}
	st, _, b = e.do("GET", "/", nil, nil)
	thumbs := parseHTML(t, b).Find(`[data-testid="overview-lock-charts"] [data-testid="overview-lock-chart"]`)
	if st != 200 || thumbs.Length() != 1 || !strings.Contains(thumbs.Text(), busy) {
		t.Errorf("overview: %d, %d lock thumbnails (%q), want %s's", st, thumbs.Length(), thumbs.Text(), busy)
	}
	if st, _, b := e.do("GET", "/api/locks/"+esc(busy)+"/history?span=7d", nil, nil); st != 400 || !bytes.Contains(b, []byte("span")) {
		t.Errorf("span=7d: %d %s, want a 400 naming span", st, b)
	}
}
