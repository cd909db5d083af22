package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
)

// Journey: the Clients page stays true while the badge says live. A
// registered service takes a second lock, drops its first, and a second
// service starts: its section, holdings and heartbeat follow, with no
// reload. (A release-all's reason is typed on its own confirmation page,
// which the re-reads do not touch.)
func TestJourneyLiveClients(t *testing.T) {
	j := newJourney(t)
	orders := store.New(j.rdb, &store.Options{App: "orders-api"})
	t.Cleanup(func() { _ = orders.Close() })
	first := j.holdLock(orders, "orders:lock:1", "77")
	j.registered(orders)

	j.open("/clients")
	j.waitLive(1)
	j.markPage()
	crow := `[data-testid=client-row][data-client="` + orders.ID() + `"]`
	holds := crow + ` [data-testid=client-hold]`
	if n := j.count(holds); n != 1 {
		t.Fatalf("%d holds shown, want orders:lock:1", n)
	}
	j.holdLock(orders, "orders:lock:2", "78")
	j.waitJS("the second hold on the open page", `sel => document.querySelectorAll(sel).length === 2`, holds, 15*time.Second)

	if err := first.Unlock(j.ctx); err != nil {
		t.Fatal(err)
	}
	// The new service's section arrives.
	billing := store.New(j.rdb, &store.Options{App: "billing-api"})
	t.Cleanup(func() { _ = billing.Close() })
	j.holdLock(billing, "billing:lock", "9")
	brow := `[data-testid=client-row][data-client="` + billing.ID() + `"]`
	j.waitJS("the new service on the open page", `sel => document.querySelector(sel) !== null`, brow, 15*time.Second)
	j.waitJS("orders-api's first hold gone from the open page", `sel => document.querySelectorAll(sel).length === 1`, holds, 15*time.Second)
	if got := j.text(holds); !strings.HasPrefix(got, "orders:lock:2") {
		t.Errorf("orders-api holds %q, want orders:lock:2", got)
	}
	beat := j.text(brow + ` [data-testid=client-heartbeat]`)
	j.waitText("the heartbeat's age moving", brow+` [data-testid=client-heartbeat]`, 15*time.Second, func(s string) bool {
		return strings.HasPrefix(s, "last beat ") && s != beat
	})
	j.checkNotReloaded()
}

// Journey: a list's footer says how many rows it shows of how many there
// are, and stays true as limiters come and go: on the whole list rows are
// added and dropped and both numbers follow; on a list filtered by kind
// (whose rows stay as rendered) the total follows.
func TestJourneyLiveListFooter(t *testing.T) {
	j := newJourney(t)
	j.bucket("footer:a", 5, 100)
	j.bucket("footer:b", 5, 100)
	footer := `[data-testid=pager-shown]`
	footerIs := func(want string) {
		t.Helper()
		j.waitText("the footer "+want, footer, 15*time.Second, func(s string) bool { return s == want })
	}
	// openLive opens path, live and marked, and checks its footer as served.
	openLive := func(path, want string) {
		t.Helper()
		j.open(path)
		j.waitLive(1)
		j.markPage()
		if got := j.text(footer); got != want {
			t.Fatalf("%s: footer %q, want %q", path, got, want)
		}
	}

	openLive("/limiters?match=footer:*", "2 shown of 2")
	j.bucket("footer:c", 5, 100)
	footerIs("3 shown of 3")
	if err := j.rdb.Del(j.ctx, "footer:a").Err(); err != nil {
		t.Fatal(err)
	}
	footerIs("2 shown of 2")
	j.checkNotReloaded()

	openLive("/limiters?match=footer:*&kind=token-bucket", "2 shown of 2")
	j.bucket("footer:d", 5, 100)
	footerIs("2 shown of 3")
	j.checkNotReloaded()
}
