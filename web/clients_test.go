package web

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
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
