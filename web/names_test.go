package web

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/views"
)

// before says whether a comes before b in the document.
func before(doc *goquery.Document, a, b string) bool {
	seenA := false
	found := false
	doc.Find(a + ", " + b).EachWithBreak(func(_ int, s *goquery.Selection) bool {
		if s.Is(a) {
			seenA = true
			return true
		}
		found = seenA
		return false
	})
	return found
}

// Who holds and who waits is named before the ids, on the lock list, the
// lock's page and the force-unlock confirmation; the audit trail names a
// released client and the holders its records mention.
func TestNamesBeforeIDs(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	app := store.New(redistest.Universal(t), &store.Options{App: "orders-api"})
	t.Cleanup(func() { app.Close() })
	name := e.prefix + "orders:9"
	h := app.NewLock(name, &store.LockOptions{Owner: "77"})
	if err := h.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = app.NewLock(name, &store.LockOptions{Owner: "78"}).Lock(wctx) }()
	eventually(t, 10*time.Second, "the console names holder and waiter", func() bool {
		sn := e.srv.live.Latest()
		if sn == nil || len(sn.Locks) != 1 || len(sn.Locks[0].Waiters) != 1 {
			return false
		}
		_, ok := sn.Registry.Lookup(h.HolderID())
		return ok
	})

	_, _, b := e.do("GET", "/locks", nil, nil)
	doc := parseHTML(t, b)
	if !before(doc, `[data-testid=lock-holders-who]`, `[data-testid=lock-holders]`) ||
		!strings.HasPrefix(doc.Find(`[data-testid=lock-holders-who]`).Text(), "orders-api on ") {
		t.Errorf("the list's holder cell: %q; want the name, then the id", doc.Find(`[data-testid=lock-row] td`).Eq(2).Text())
	}
	_, _, b = e.do("GET", views.LockURL(name), nil, nil)
	doc = parseHTML(t, b)
	if !before(doc, `[data-testid=holder-who]`, `[data-testid=holder-id]`) || !before(doc, `[data-testid=waiter-who]`, `[data-testid=waiter-id]`) {
		t.Error("the lock page shows an id before the name of its holder or waiter")
	}
	if doc.Find(`[data-testid=holders-past]`).Length() != 1 {
		t.Error("the lock page does not say where past holders are")
	}
	_, _, b = e.do("GET", views.ForceUnlockURL(name)+"?holder="+url.QueryEscape(h.HolderID()), nil, nil)
	doc = parseHTML(t, b)
	if who := doc.Find(`[data-testid=confirm-holder-who]`).Text(); !strings.HasPrefix(who, "orders-api on ") || !strings.Contains(who, "owner 77") ||
		!before(doc, `[data-testid=confirm-holder-who]`, `[data-testid=confirm-holder]`) {
		t.Errorf("the confirmation names the holder %q", who)
	}

	e.sendJSON("POST", "/api/clients/"+app.ID()+"/release-all", `{"reason":"names"}`, 200, nil)
	cancel()
	_, _, b = e.do("GET", "/audit", nil, nil)
	doc = parseHTML(t, b)
	row := doc.Find(`[data-testid=audit-row][data-action=release-all]`).First()
	if who := row.Find(`[data-testid=audit-target-who]`).Text(); !strings.HasPrefix(who, "orders-api on ") {
		t.Errorf("the audit's release-all target is named %q", who)
	}
	unlock := doc.Find(`[data-testid=audit-row][data-action=force-unlock]`).First().Find(`[data-testid=audit-before]`).Text()
	if !strings.HasPrefix(unlock, "held by orders-api on ") || !strings.Contains(unlock, "("+h.HolderID()+")") {
		t.Errorf("the audit's force-unlock before %q; want the holder's name, then its id", unlock)
	}
}

// A firing alert links to what it is about; the events page and API
// filter by a part of the lock's name and by type, and say what they
// searched when nothing matches.
func TestAlertLinksAndEventFilters(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		fastTicks(c)
		c.Alerts = AlertConfig{For: map[string]time.Duration{RuleLockNoExpiry: 0}}
		stuck := strings.TrimSuffix(c.Match, "*") + "stuck"
		if err := c.Inspector.SetObjectPatterns(inspect.ObjectPatterns{TokenLocks: []string{stuck}}); err != nil {
			t.Fatal(err)
		}
	})
	stuck := e.prefix + "stuck"
	if err := e.rdb.SetNX(t.Context(), stuck, "holder-token", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.rdb.Del(context.Background(), stuck) })
	eventually(t, 10*time.Second, "the alert on the overview", func() bool {
		_, _, b := e.do("GET", "/", nil, nil)
		href, _ := parseHTML(t, b).Find(`[data-testid=alert][data-rule=lock-no-expiry] [data-testid=alert-link]`).Attr("href")
		return href == views.LockURL(stuck)
	})

	e.makeLock(e.prefix+"orders:1", "w1", 1, time.Minute)
	e.makeLock(e.prefix+"billing:1", "w1", 1, time.Minute)
	e.synced()
	for _, n := range []string{"orders:1", "billing:1"} {
		e.sendJSON("POST", "/api/locks/"+esc(e.prefix+n)+"/force-unlock", `{"holder":"`+holderID("w1")+`","reason":"events"}`, 200, nil)
	}
	names := func(path string) []string {
		_, _, b := e.do("GET", path, nil, nil)
		var out []string
		parseHTML(t, b).Find(`[data-testid=event-row] [data-testid=event-name]`).Each(func(_ int, s *goquery.Selection) {
			out = append(out, strings.TrimPrefix(s.Text(), e.prefix))
		})
		return out
	}
	if got := names("/events?q=ORDERS&type=force-unlock"); len(got) != 1 || got[0] != "orders:1" {
		t.Errorf("events of orders, force-unlocked: %v", got)
	}
	if got := names("/events?type=expired&q=" + url.QueryEscape(e.prefix)); len(got) != 0 {
		t.Errorf("expired events: %v", got)
	}
	_, _, b := e.do("GET", "/events?type=expired&q=billing", nil, nil)
	if txt := parseHTML(t, b).Find(`[data-testid=events-empty]`).Text(); !strings.Contains(txt, `No expired event on a lock whose name holds "billing"`) {
		t.Errorf("empty events say %q", txt)
	}
	var api struct{ Events []struct{ Name, Type string } }
	e.getJSON("/api/events?type=force-unlock&q="+url.QueryEscape(e.prefix+"billing"), 200, &api)
	if len(api.Events) != 1 || api.Events[0].Type != "force-unlock" {
		t.Errorf("API events %+v", api.Events)
	}
	e.getJSON("/api/events?type=nonsense", 400, nil)
}
