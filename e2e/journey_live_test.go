package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// markPage tags the open document, so a later check tells that the page
// was never reloaded (a reload gives a fresh window without the tag).
func (j *journey) markPage() {
	j.t.Helper()
	j.eval(`() => { window.__lwNoReload = true; }`, nil)
}

func (j *journey) checkNotReloaded() {
	j.t.Helper()
	if v := j.eval(`() => window.__lwNoReload === true`, nil); v != true {
		j.t.Fatal("the page was reloaded; the change was to arrive live")
	}
}

// Journey: a page open on /locks shows orders-api holding a lock; the lock
// changes hands to billing-api, and the row says so, with the new holder's
// hold time, without a reload.
func TestJourneyLiveHolderChange(t *testing.T) {
	j := newJourney(t)
	appA := store.New(j.rdb, &store.Options{App: "orders-api"})
	appB := store.New(j.rdb, &store.Options{App: "billing-api"})
	t.Cleanup(func() { _ = appA.Close(); _ = appB.Close() })
	const name = "live:lock:handover"
	la := j.holdLock(appA, name, "11")
	redistest.EventuallyWithin(t, 15*time.Second, "the console to know both clients", func() bool {
		var body struct{ Clients []struct{ ID, App string } }
		j.apiJSON("/api/clients", &body)
		known := 0
		for _, c := range body.Clients {
			if (c.ID == appA.ID() && c.App == "orders-api") || (c.ID == appB.ID() && c.App == "billing-api") {
				known++
			}
		}
		return known == 2
	})

	j.open("/locks")
	row := `[data-testid=lock-row][data-lock="` + name + `"]`
	if who := j.text(row + ` [data-testid=lock-holders-who]`); !strings.HasPrefix(who, "orders-api on ") || !strings.Contains(who, "owner 11") {
		t.Fatalf("the page was rendered saying %q about the holder, want orders-api, owner 11", who)
	}
	j.waitLive(1)
	j.markPage()

	if err := la.Unlock(j.ctx); err != nil {
		t.Fatal(err)
	}
	lb := appB.NewLock(name, &store.LockOptions{Owner: "22"})
	if err := lb.TryLock(j.ctx); err != nil {
		t.Fatalf("billing-api takes %s: %v", name, err)
	}
	t.Cleanup(func() { _ = lb.Unlock(j.ctx) })

	// The hold time shows once the page's clock is past the acquisition
	// (frames carry the instant; the page ages it every second).
	who := j.waitText("the row to name billing-api as the holder, with its hold time", row+` [data-testid=lock-holders-who]`, 15*time.Second,
		func(s string) bool { return strings.HasPrefix(s, "billing-api on ") && strings.Contains(s, ", held ") })
	if !strings.Contains(who, "owner 22, held ") || strings.Contains(who, "orders-api") {
		t.Errorf("after the handover the row says %q; want billing-api, owner 22, its hold time, and no orders-api", who)
	}
	if ids := j.text(row + ` [data-testid=lock-holders]`); !strings.HasPrefix(ids, appB.ID()+":22") {
		t.Errorf("holder ids shown %q, want billing-api's %s:22", ids, appB.ID())
	}
	j.checkNotReloaded()

	// The lock's own page: the lock goes back to orders-api, and a holder
	// row for it appears, saying who it is, with its force-unlock form.
	j.open("/locks/" + name)
	j.waitLive(1)
	j.markPage()
	if err := lb.Unlock(j.ctx); err != nil {
		t.Fatal(err)
	}
	la = appA.NewLock(name, &store.LockOptions{Owner: "33"})
	if err := la.TryLock(j.ctx); err != nil {
		t.Fatalf("orders-api takes %s back: %v", name, err)
	}
	t.Cleanup(func() { _ = la.Unlock(j.ctx) })
	hrow := `[data-testid=holder-row][data-holder="` + appA.ID() + `:33"]`
	who = j.waitText("a holder row for orders-api, owner 33", hrow+` [data-testid=holder-who]`, 15*time.Second,
		func(s string) bool { return strings.HasPrefix(s, "orders-api on ") && strings.Contains(s, ", held ") })
	if !strings.Contains(who, "owner 33") {
		t.Errorf("new holder row says %q", who)
	}
	if v := j.eval(`sel => document.querySelector(sel + ' input[name=holder]').value`, hrow); v != appA.ID()+":33" {
		t.Errorf("the new row's force-unlock form names holder %v", v)
	}
	// billing-api no longer holds it: its row leaves the table (with its
	// force-unlock button); the timeline is where past holders are.
	if n := j.count(`[data-testid=holder-row][data-holder="` + appB.ID() + `:22"]`); n != 0 {
		t.Errorf("billing-api's row is still in the holders table (%d rows)", n)
	}
	if n := j.count(`[data-testid=holder-row]:visible [data-testid=force-unlock-button]`); n != 1 {
		t.Errorf("%d force-unlock buttons, want one: orders-api's", n)
	}
	j.checkNotReloaded()
}

// Journey: a wall is open when a SETNX lock without expiry appears
// (lock-no-expiry, its "for" set to 0 s); the alert shows on the wall,
// above the tiles, and leaves it once the lock is deleted; no reload.
func TestJourneyLiveWallAlert(t *testing.T) {
	srv, rdb := redisFor(t)
	j := &journey{t: t, ctx: ctxT(t), redis: srv, rdb: rdb}
	j.con = startConsole(t, srv.URL(), "--token-lock-pattern", "job:*", "--alert-lock-no-expiry", "0s", "--keyspace-events", "on")
	j.tab = openTab(t)
	j.allowFaviconIfMissing()

	j.open("/wall")
	j.waitLive(1)
	alert := `[data-testid=alert][data-rule="lock-no-expiry"][data-name="job:nightly-export"]`
	if n := j.count(alert); n != 0 {
		t.Fatalf("the wall shows %d lock-no-expiry alerts before the lock exists", n)
	}
	j.markPage()

	if err := rdb.SetNX(j.ctx, "job:nightly-export", "export-1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(j.ctx, "job:nightly-export") })
	j.waitJS("the lock-no-expiry alert on the open wall", `sel => document.querySelector(sel) !== null`, alert, 20*time.Second)
	if msg := j.text(alert + ` .alert-message`); !strings.Contains(msg, "job:nightly-export") || !strings.Contains(msg, "no expiry") {
		t.Errorf("alert message %q", msg)
	}
	// Alerts come first on the wall, before the limiter tiles.
	if first := j.eval(`sel => !!(document.querySelector(sel).compareDocumentPosition(document.querySelector("[data-testid=wall-tiles]")) & Node.DOCUMENT_POSITION_FOLLOWING)`, alert); first != true {
		t.Error("the alert is not above the wall's tiles")
	}

	if err := rdb.Del(j.ctx, "job:nightly-export").Err(); err != nil {
		t.Fatal(err)
	}
	j.waitJS("the alert to leave the open wall", `sel => document.querySelector(sel) === null`, alert, 20*time.Second)
	if n := j.count(`[data-testid=alerts-empty]`); n != 0 {
		t.Error("the wall says \"No alerts firing.\"; it shows nothing when quiet")
	}
	j.checkNotReloaded()

	// The overview the same way, where no alert reads "No alerts firing.".
	j.open("/")
	j.waitLive(1)
	j.markPage()
	if err := rdb.SetNX(j.ctx, "job:nightly-export", "export-2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	j.waitJS("the alert on the open overview", `sel => document.querySelector(sel) !== null`, alert, 20*time.Second)
	if err := rdb.Del(j.ctx, "job:nightly-export").Err(); err != nil {
		t.Fatal(err)
	}
	j.waitText("the overview to say no alert fires", `[data-testid=alerts-empty]`, 20*time.Second,
		func(s string) bool { return s == "No alerts firing." })
	j.checkNotReloaded()
}
