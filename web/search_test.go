package web

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// ?q= finds a lock by its name, or by who holds or waits for it: the
// application, the host, the owner, the client id; an empty answer says
// what was searched and how many locks there are, and so does /locks.
func TestSearchFindsPeople(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	app := store.New(redistest.Universal(t), &store.Options{App: "checkout-svc"})
	t.Cleanup(func() { app.Close() })
	mine := app.NewLock(e.prefix+"orders:1", &store.LockOptions{Owner: "worker-7"})
	if err := mine.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mine.Unlock(context.Background()) })
	e.makeLock(e.prefix+"invoices:checkout", "w", 1, time.Minute)
	e.makeLock(e.prefix+"other", "w", 1, time.Minute)
	e.synced()
	names := func(q string) []string {
		var list struct {
			Locks []struct{ Name string }
			Total int
			All   int
		}
		e.getJSON("/api/locks?q="+url.QueryEscape(q), 200, &list)
		var out []string
		for _, l := range list.Locks {
			out = append(out, strings.TrimPrefix(l.Name, e.prefix))
		}
		if list.All != 3 || list.Total != len(out) {
			t.Errorf("q=%s: total %d, all %d for %d rows; want all 3", q, list.Total, list.All, len(out))
		}
		return out
	}
	var hostName string
	eventually(t, 10*time.Second, "the registry names the holder", func() bool {
		ci, ok := e.srv.live.Latest().Registry.Lookup(mine.HolderID())
		hostName = ci.Host
		return ok && ci.Host != ""
	})
	cases := map[string]string{
		"CHECKOUT":           "invoices:checkout orders:1", // the name, or the app, any case
		"worker-7":           "orders:1",                   // the owner
		mine.HolderID()[:36]: "orders:1",                   // the client id
		"other":              "other",
	}
	if !strings.Contains(strings.ToLower(e.prefix+"invoices:checkout other"+testUUID), strings.ToLower(hostName)) {
		cases[strings.ToUpper(hostName)] = "orders:1" // the host, when no name holds it too
	}
	for q, want := range cases {
		if got := strings.Join(names(q), " "); got != want {
			t.Errorf("q=%s found %q, want %q", q, got, want)
		}
	}
	if got := names("nobody-at-all"); len(got) != 0 {
		t.Errorf("found %v", got)
	}
	_, _, body := e.do("GET", "/locks?q=nobody-at-all", nil, nil)
	doc := parseHTML(t, body)
	empty := doc.Find(`[data-testid=locks-empty]`)
	if _, hidden := empty.Attr("hidden"); hidden || !strings.Contains(empty.Text(), `No lock matches "nobody-at-all"`) ||
		!strings.Contains(empty.Text(), "among the 3 locks held") {
		t.Errorf("empty /locks says %q (hidden %v)", empty.Text(), hidden)
	}
	if v, _ := doc.Find(`[data-testid=search-input]`).Attr("value"); v != "nobody-at-all" {
		t.Errorf("the search box holds %q", v)
	}
	e.getJSON("/api/locks?q="+strings.Repeat("x", maxSearchLen+1), 400, nil)
}
