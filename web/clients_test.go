package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
)

type apiClient struct {
	ID             string         `json:"id"`
	Registered     bool           `json:"registered"`
	App            string         `json:"app"`
	PID            int            `json:"pid"`
	HeartbeatAgeMS *int64         `json:"heartbeat_age_ms"`
	Holds          []inspect.Hold `json:"holds"`
}

// clientsSetup has a registered application client hold two locks and a
// Redisson-style (unregistered) holder one, and waits until the sampler
// has seen them all and read the registry.
func clientsSetup(t *testing.T, e *testEnv) (*store.Client, []string) {
	t.Helper()
	ctx := t.Context()
	app := store.New(e.rdb, &store.Options{App: "orders-api", Version: "v1.4.2", Beat: time.Hour})
	t.Cleanup(func() { _ = app.Close() })
	names := []string{e.prefix + "orders:1", e.prefix + "orders:2"}
	for _, n := range names {
		l := app.NewLock(n, &store.LockOptions{Owner: "77", NoWatchdog: true, Lease: time.Minute})
		if err := l.TryLock(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.rdb.Del(context.Background(), n) })
	}
	e.makeLock(e.prefix+"foreign", "thread-44", 1, time.Minute)
	eventually(t, 10*time.Second, "the sampler to see the clients", func() bool {
		sn := e.srv.live.Latest()
		if sn == nil || sn.Registry == nil || len(sn.Locks) < 3 {
			return false
		}
		_, ok := sn.Registry.Clients[app.ID()]
		return ok
	})
	return app, names
}

func findClient(cs []apiClient, id string) *apiClient {
	for i := range cs {
		if cs[i].ID == id {
			return &cs[i]
		}
	}
	return nil
}

func TestAPIClientsAndHolderIdentity(t *testing.T) {
	e := newEnv(t, nil)
	app, names := clientsSetup(t, e)

	var list struct{ Clients []apiClient }
	e.getJSON("/api/clients", 200, &list)
	c := findClient(list.Clients, app.ID())
	if c == nil || !c.Registered || c.App != "orders-api" || c.HeartbeatAgeMS == nil || len(c.Holds) != 2 ||
		c.Holds[0].Lock != names[0] || c.Holds[0].Holder != app.ID()+":77" {
		t.Fatalf("registered client = %+v", c)
	}
	f := findClient(list.Clients, testUUID)
	if f == nil || f.Registered || f.HeartbeatAgeMS != nil || len(f.Holds) != 1 {
		t.Fatalf("foreign client = %+v", f)
	}

	var one apiLock
	e.getJSON("/api/locks/"+esc(names[0]), 200, &one)
	h := one.Holders[0]
	if h.Client == nil || h.Client.App != "orders-api" || h.Client.Version != "v1.4.2" || h.Client.Gone ||
		!strings.HasPrefix(h.Who, "orders-api on ") || !strings.Contains(h.Who, "owner 77") {
		t.Fatalf("holder = %+v (client %+v)", h, h.Client)
	}
	// The client waits for replicas by default (store.Options.ReplicaAcks).
	if h.Client.Acked == nil || !*h.Client.Acked || one.Acked == nil || !*one.Acked {
		t.Errorf("acked: holder's client %v, lock %v; want true", h.Client.Acked, one.Acked)
	}
	var foreign apiLock
	e.getJSON("/api/locks/"+esc(e.prefix+"foreign"), 200, &foreign)
	if fh := foreign.Holders[0]; fh.Client != nil || !strings.HasPrefix(fh.Who, "unregistered client "+testUUID+" (Redisson or other)") {
		t.Fatalf("foreign holder = %+v", fh)
	}
	if foreign.Acked != nil {
		t.Errorf("acked %v for a holder whose client does not say", *foreign.Acked)
	}
	// Hold time of a holder without recorded times counts from the
	// console's first sight, and says so.
	eventually(t, 5*time.Second, "a hold time", func() bool {
		e.getJSON("/api/locks/"+esc(e.prefix+"foreign"), 200, &foreign)
		return foreign.Holders[0].HeldMS > 0
	})
	if !foreign.Holders[0].HeldSinceSeen {
		t.Fatalf("foreign hold time not marked as the console's: %+v", foreign.Holders[0])
	}

	st, _, body := e.do("GET", "/locks/"+esc(names[0]), nil, nil)
	if st != 200 || !strings.Contains(string(body), "orders-api on ") {
		t.Fatalf("lock page %d does not name the client: %s", st, body)
	}
	st, _, body = e.do("GET", "/clients", nil, nil)
	if st != 200 || !strings.Contains(string(body), "orders-api on ") || !strings.Contains(string(body), "unregistered client "+testUUID) {
		t.Fatalf("clients page %d: %s", st, body)
	}
}

func TestAPIReleaseAll(t *testing.T) {
	e := newEnv(t, withTokens)
	app, names := clientsSetup(t, e)
	path := "/api/clients/" + app.ID() + "/release-all"
	admin := bearerOf(adminTok)
	admin["Content-Type"] = "application/json"
	viewer := bearerOf(viewerTok)
	viewer["Content-Type"] = "application/json"

	for _, tc := range []struct {
		hdr  map[string]string
		path string
		body string
		want int
	}{
		{viewer, path, `{"reason":"crashed"}`, http.StatusForbidden},
		{admin, path, `{"reason":"  "}`, http.StatusBadRequest},
		{admin, path, `{}`, http.StatusBadRequest},
		{admin, "/api/clients/not-a-uuid/release-all", `{"reason":"x"}`, http.StatusBadRequest},
		{admin, "/api/clients/" + testUUID2 + "/release-all", `{"reason":"x"}`, http.StatusNotFound},
	} {
		if st, _, b := e.do("POST", tc.path, strings.NewReader(tc.body), tc.hdr); st != tc.want {
			t.Errorf("POST %s %s: %d, want %d (%s)", tc.path, tc.body, st, tc.want, b)
		}
	}
	for _, n := range names {
		if e.rdb.Exists(t.Context(), n).Val() != 1 {
			t.Fatalf("a refused release-all changed %s", n)
		}
	}

	st, _, b := e.do("POST", path, strings.NewReader(`{"reason":"pod crashed"}`), admin)
	if st != 200 || strings.Count(string(b), `"released":true`) != 2 {
		t.Fatalf("release-all: %d %s", st, b)
	}
	for _, n := range names {
		if e.rdb.Exists(t.Context(), n).Val() != 0 {
			t.Fatalf("%s still held", n)
		}
	}
	if e.rdb.Exists(t.Context(), e.prefix+"foreign").Val() != 1 {
		t.Fatal("another client's lock was released")
	}
	var unlocks, alls int
	for _, r := range e.auditRecords(bearerOf(adminTok)) {
		switch {
		case r.Action == "force-unlock" && r.Outcome == inspect.OutcomeOK && r.Reason == "pod crashed":
			unlocks++
		case r.Action == "release-all" && r.Outcome == inspect.OutcomeOK && r.Target == app.ID():
			alls++
		}
	}
	if unlocks != 2 || alls != 1 {
		t.Fatalf("audit: %d force-unlock records, %d release-all, want 2 and 1", unlocks, alls)
	}
}

// testUUID2 is a client id nobody registers or holds with.
const testUUID2 = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"

// Release-all from the page is a confirmation like force-unlock's: the
// client named by application, host and pid, each lock and what its
// release does, a warning while the client is alive, a reason, then
// post/redirect/get. An unknown client is a 404, as a page and as JSON.
func TestPageReleaseAllConfirmation(t *testing.T) {
	e := newEnv(t, nil)
	app, names := clientsSetup(t, e)
	page := views.ReleaseAllURL(app.ID())
	st, _, b := e.do("GET", page, nil, nil)
	doc := parseHTML(t, b)
	title := doc.Find(`[data-testid=release-all-title]`).Text()
	if st != 200 || !strings.HasPrefix(title, "Release everything orders-api on ") || !strings.Contains(title, "(pid ") ||
		strings.Contains(title, app.ID()) {
		t.Fatalf("confirmation: %d, title %q; want the client by app, host and pid", st, title)
	}
	if n := doc.Find(`[data-testid=release-all-step]`).Length(); n != 2 ||
		!strings.Contains(doc.Find(`[data-testid=release-all-step]`).First().Text(), "deletes") {
		t.Errorf("steps %q; want both locks with what their release does", doc.Find(`ol.steps`).Text())
	}
	if !strings.Contains(doc.Find(`[data-testid=release-all-alive-warning]`).Text(), "alive") {
		t.Error("no warning that the client is alive")
	}
	// The Clients page links to it, with the warning beside the link.
	_, _, b = e.do("GET", "/clients", nil, nil)
	row := parseHTML(t, b).Find(`[data-testid=client-row][data-client="` + app.ID() + `"]`)
	if href, _ := row.Find(`[data-testid=release-all-link]`).Attr("href"); href != page || row.Find(`[data-testid=release-all-alive]`).Length() != 1 ||
		row.Find(`form`).Length() != 0 {
		t.Errorf("the client's row: link %q, warning %d, forms %d; want a link to the confirmation with a warning, no button",
			href, row.Find(`[data-testid=release-all-alive]`).Length(), row.Find(`form`).Length())
	}

	// Without a reason: the confirmation again, 400, nothing released.
	body, hdr := form("reason", " ")
	st, _, b = e.do("POST", page, body, hdr)
	if st != 400 || parseHTML(t, b).Find(`[data-testid=error-reason]`).Length() != 1 || e.rdb.Exists(t.Context(), names[0]).Val() != 1 {
		t.Fatalf("POST without a reason: %d", st)
	}
	body, hdr = form("reason", "pod hung")
	st, h, _ := e.do("POST", page, body, hdr)
	if st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/clients?") {
		t.Fatalf("POST: %d to %q, want 303 to /clients", st, h.Get("Location"))
	}
	for _, n := range names {
		if e.rdb.Exists(t.Context(), n).Val() != 0 {
			t.Errorf("%s still held", n)
		}
	}
	_, _, b = e.do("GET", h.Get("Location"), nil, nil)
	if got := parseHTML(t, b).Find(`[data-testid=flash]`).Text(); !strings.Contains(got, "orders-api on ") || !strings.Contains(got, "2 of 2") {
		t.Errorf("flash after release-all %q", got)
	}

	unknown := views.ReleaseAllURL(testUUID2)
	st, hd, b := e.do("GET", unknown, nil, nil)
	if st != 404 || !strings.HasPrefix(hd.Get("Content-Type"), "text/html") || !strings.Contains(string(b), "no client "+testUUID2) {
		t.Errorf("GET an unknown client's release-all: %d %s", st, hd.Get("Content-Type"))
	}
	body, hdr = form("reason", "x")
	if st, _, _ := e.do("POST", unknown, body, hdr); st != 404 {
		t.Errorf("POST an unknown client's release-all: %d, want 404", st)
	}
}
