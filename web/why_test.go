package web

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
)

// apiWhy is GET /api/why/{name}.
type apiWhy struct {
	Name    string         `json:"name"`
	Kind    string         `json:"kind"`
	State   string         `json:"state"`
	Answer  string         `json:"answer"`
	Facts   map[string]any `json:"facts"`
	Actions []struct {
		Action, URL, Command, Holder string
	} `json:"actions"`
}

// A deadlocked lock's answer names both services, the cycle, how long the
// waiter has waited and the hold to break first; its page opens with the
// same paragraph. Once the cycle is broken and both let go, the name
// answers 200 "free" with since when and who held it last, on the API and
// on the lock's page, not a 404.
func TestWhyDeadlockedThenFree(t *testing.T) {
	e := newEnv(t, nil)
	p := deadlock(t, e.prefix)
	var w apiWhy
	eventually(t, 15*time.Second, "the deadlock in the answer", func() bool {
		st, _, b := e.do("GET", "/api/why/"+esc(p.l1), nil, nil)
		return st == 200 && json.Unmarshal(b, &w) == nil && w.State == "deadlocked" && strings.Contains(w.Answer, "billing") && strings.Contains(w.Answer, "shipping")
	})
	for _, s := range []string{p.l1, p.l2, "deadlock", "force-unlock", "1 client waits for it: shipping"} {
		if !strings.Contains(w.Answer, s) {
			t.Errorf("answer %q does not say %q", w.Answer, s)
		}
	}
	if ms, _ := w.Facts["longest_wait_ms"].(float64); ms <= 0 {
		t.Errorf("facts %v: want the waiter's current wait", w.Facts)
	}
	if w.Facts["app"] != "billing" || w.Facts["holder"] != p.aHolds.HolderID() || w.Facts["deadlock"] != true {
		t.Errorf("facts %v: want billing's hold and the deadlock", w.Facts)
	}
	if len(w.Actions) == 0 || w.Actions[0].Action != "force-unlock" || w.Actions[0].Holder != p.bHolds.HolderID() ||
		!strings.Contains(w.Actions[0].Command, "lockwarden unlock "+p.l2+" --holder "+p.bHolds.HolderID()) {
		t.Errorf("actions %+v: want the youngest hold (shipping's on %s) first", w.Actions, p.l2)
	}

	_, _, body := e.do("GET", views.LockURL(p.l1), nil, nil)
	doc := parseHTML(t, body)
	panel := doc.Find(`[data-testid=why-panel]`)
	if st, _ := panel.Attr("data-state"); st != "deadlocked" || !strings.Contains(panel.Find(`[data-testid=why-answer]`).Text(), "shipping") {
		t.Errorf("lock page's why panel: state %q, text %q", st, panel.Text())
	}

	e.sendJSON("POST", "/api/locks/"+esc(p.l2)+"/force-unlock",
		`{"holder":"`+p.bHolds.HolderID()+`","reason":"break the cycle"}`, 200, nil)
	p.finish(t)
	eventually(t, 15*time.Second, "the free lock's answer", func() bool {
		e.getJSON("/api/why/"+esc(p.l2), 200, &w)
		return w.State == "free"
	})
	if !strings.Contains(w.Answer, "free since") || !strings.Contains(w.Answer, "last held by") || w.Facts["free_since_at"] == nil {
		t.Errorf("free answer %q (facts %v): want since when and who held it last", w.Answer, w.Facts)
	}
	st, _, body := e.do("GET", views.LockURL(p.l2), nil, nil)
	doc = parseHTML(t, body)
	if got, _ := doc.Find(`[data-testid=why-panel]`).Attr("data-state"); st != 200 || got != "free" {
		t.Errorf("the free lock's page: status %d, why state %q; want 200 and free", st, got)
	}
}

// A name the console never listed is a 404 that says what was looked for.
func TestWhyUnknownNameSaysSo(t *testing.T) {
	e := newEnv(t, nil)
	st, _, body := e.do("GET", "/api/why/"+esc(e.prefix+"never-seen"), nil, nil)
	var j struct{ Error string }
	_ = json.Unmarshal(body, &j)
	if st != 404 || !strings.Contains(j.Error, "no lock or limiter named") || !strings.Contains(j.Error, e.prefix+"never-seen") {
		t.Errorf("status %d, body %s; want 404 naming the name", st, body)
	}
}

// A token bucket's answer says its rule in words with its capacity and
// refill; once it rejects, when rejections started; after an audited
// edit, the change with its reason.
func TestWhyLimiterRuleRejectionsAndChange(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	name := e.prefix + "rl:why"
	tb := e.app.NewTokenBucket(name, nil)
	if err := tb.Init(ctx, store.TokenBucketConfig{Capacity: 20, IntervalMS: 100, Initial: 20}); err != nil {
		t.Fatal(err)
	}
	e.synced()
	var w apiWhy
	e.getJSON("/api/why/"+esc(name), 200, &w)
	for _, s := range []string{"10 per second, bursts up to 20", "capacity 20", "refilling one permit every 100 ms"} {
		if !strings.Contains(w.Answer, s) {
			t.Errorf("answer %q does not say %q", w.Answer, s)
		}
	}
	if w.Facts["capacity"] != float64(20) || w.State != "idle" {
		t.Errorf("state %q facts %v", w.State, w.Facts)
	}
	eventually(t, 10*time.Second, "rejections in the answer", func() bool {
		for range 40 {
			if _, err := tb.TryAcquire(ctx, 1); err != nil {
				t.Fatal(err)
			}
		}
		e.getJSON("/api/why/"+esc(name), 200, &w)
		return w.State == "rejecting"
	})
	if !strings.Contains(w.Answer, "Rejections started at") || w.Facts["rejecting_since_at"] == nil {
		t.Errorf("answer %q: want when rejections started", w.Answer)
	}
	e.sendJSON("PUT", "/api/limiters/"+esc(name), `{"rate":40,"interval_ms":25,"reason":"test"}`, 200, nil)
	e.getJSON("/api/why/"+esc(name), 200, &w)
	if !strings.Contains(w.Answer, "The last audited change: modify") || !strings.Contains(w.Answer, "40 per second, bursts up to 40") ||
		!strings.Contains(w.Answer, `because "test"`) {
		t.Errorf("answer %q: want the new rule and the edit with its reason", w.Answer)
	}
	_, _, body := e.do("GET", views.LimiterURL(name), nil, nil)
	if txt := parseHTML(t, body).Find(`[data-testid=why-answer]`).Text(); !strings.Contains(txt, "rate=40") {
		t.Errorf("limiter page's why %q: want the edit", txt)
	}
}

// A lock released between two ticks is still in the console's snapshot
// and in no history yet: its page answers free, never a bare 404.
func TestLockReleasedBeforeTheNextTickIsFree(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "just-released"
	l := e.app.NewLock(name, nil)
	if err := l.TryLock(t.Context()); err != nil {
		t.Fatal(err)
	}
	var held struct {
		Holders []inspect.Holder `json:"holders"`
	}
	var list struct {
		Locks []struct {
			Name string `json:"name"`
		} `json:"locks"`
	}
	eventually(t, 15*time.Second, "the lock listed", func() bool {
		e.getJSON("/api/locks?q="+url.QueryEscape(name), 200, &list)
		e.getJSON("/api/locks/"+esc(name), 200, &held)
		return len(held.Holders) == 1 && len(list.Locks) == 1 && list.Locks[0].Name == name
	})
	if err := l.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	var free struct {
		State     string     `json:"state"`
		FreeSince *time.Time `json:"free_since"`
		LastHeld  *struct {
			Holder string `json:"holder"`
		} `json:"last_held"`
	}
	st, _, body := e.do("GET", "/api/locks/"+esc(name), nil, nil)
	if st != 200 {
		t.Fatalf("GET right after the release: %d %s, want 200 and state free", st, body)
	}
	// Since when (about now) and who held it last (the tick that still
	// lists it had the holder); before, neither was said.
	if err := json.Unmarshal(body, &free); err != nil || free.State != "free" || free.FreeSince == nil ||
		time.Since(*free.FreeSince) > time.Minute || free.LastHeld == nil || free.LastHeld.Holder != l.HolderID() {
		t.Errorf("GET right after the release: %s (%v), want state free, free since a moment ago, last held by %s", body, err, l.HolderID())
	}
}
