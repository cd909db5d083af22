package e2e

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// contend makes a second client wait for name while holder has it, then
// lets go: the hand-off records the waiter's wait. It returns the waiter,
// the lock's holder from then on.
func (j *journey) contend(app *store.Client, holder *store.Lock, name string) *store.Lock {
	j.t.Helper()
	waiter := app.NewLock(name, nil)
	j.unlockAtEnd(waiter)
	got := lockAsync(j.ctx, waiter)
	redistest.EventuallyWithin(j.t, 10*time.Second, "the waiter queues for "+name, func() bool {
		return j.rdb.Exists(j.ctx, redistest.LockQueueKey(name)).Val() == 1
	})
	if err := holder.Unlock(j.ctx); err != nil {
		j.t.Fatal(err)
	}
	if err := <-got; err != nil {
		j.t.Fatalf("the waiter for %s: %v", name, err)
	}
	return waiter
}

// Journey: the wall sorted by contention. Two store locks are held; the
// wall opened with ?sort=contention lists them by name while neither had
// to wait; a service then waits for the second one, and without a reload
// it moves to the top with its waited count and p99. The lock's page then
// shows its waits, and a second contended hand-off updates its 10 s row
// live.
func TestJourneyWallSortsByContention(t *testing.T) {
	j := newJourney(t)
	const calm, busy = "a:lock:calm", "z:lock:busy"
	app := store.New(j.rdb, &store.Options{App: "orders-api"})
	var holder *store.Lock
	for _, name := range []string{calm, busy} {
		l := app.NewLock(name, nil)
		if err := l.Lock(j.ctx); err != nil {
			t.Fatal(err)
		}
		j.unlockAtEnd(l)
		j.wrote(name, "locks")
		holder = l
	}

	j.open("/wall?sort=contention")
	j.waitLive(2)
	j.markPage()
	order := `() => [...document.querySelectorAll("[data-testid=wall-lock]")].map(r => r.dataset.lock).join(",")`
	if got := j.evalString(order, nil); got != calm+","+busy {
		t.Fatalf("wall order %q before any wait, want by name", got)
	}
	holder = j.contend(app, holder, busy)
	j.waitJS("the contended lock on top of the wall", `() => {
		const top = document.querySelector("[data-testid=wall-lock]");
		return top !== null && top.dataset.lock === "`+busy+`" && top.querySelector("[data-field=wait10-contended]").textContent.startsWith("1 ");
	}`, nil, 15*time.Second)
	j.checkNotReloaded()
	if p99 := j.text(`[data-testid=wall-lock][data-lock="` + busy + `"] [data-testid=lock-wait-p99]`); p99 == "–" || p99 == "" {
		t.Errorf("the contended lock's p99 wait is %q", p99)
	}
	if got := j.evalString(order, nil); got != busy+","+calm {
		t.Errorf("wall order %q after the wait", got)
	}
	// The sort link leads back to the name order, server-rendered.
	j.clickTo(`[data-testid=wall-sort-link]`)
	if got := j.evalString(order, nil); got != calm+","+busy {
		t.Errorf("wall by name %q", got)
	}

	j.open("/locks/" + url.PathEscape(busy))
	j.waitLive(2)
	j.markPage()
	ten := `[data-testid=lock-wait-row][data-window-s="10"] [data-field=wait-contended]`
	j.waitText("the first wait in the 10 s row", ten, 15*time.Second, func(s string) bool { return strings.HasPrefix(s, "1 ") })
	j.contend(app, holder, busy)
	j.waitText("the second wait in the 10 s row", ten, 15*time.Second, func(s string) bool { return strings.HasPrefix(s, "2 ") })
	j.waitText("the second wait in the 1 min row", `[data-testid=lock-wait-row][data-window-s="60"] [data-field=wait-contended]`,
		15*time.Second, func(s string) bool { return strings.HasPrefix(s, "2 ") })
	j.checkNotReloaded()
}
