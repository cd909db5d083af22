package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// A Redisson client id and thread, as a Java service would write them.
const javaHolder = "5f1c9d2e-8b7a-4c3d-9e0f-1a2b3c4d5e6f:73"

var secondsText = regexp.MustCompile(`^(\d+\.\d) s$`)

// leaseSeconds reads a lease shown as "12.3 s".
func leaseSeconds(t *testing.T, s string) float64 {
	t.Helper()
	m := secondsText.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("lease shown as %q, want seconds like \"12.3 s\"", s)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// Journey 2: a lock written with raw Redis commands in Redisson's layout
// (not through store) shows on the locks page with its holder, its reentry
// count and a lease that counts down.
func TestJourney2RedissonLockCountsDown(t *testing.T) {
	j := newJourney(t)
	const name = "payments:lock:settle"
	j.redissonLock(name, javaHolder, 3, 50*time.Second)

	resp := j.open("/locks")
	row := `[data-testid=lock-row][data-lock="` + name + `"]`
	// The kind as the server rendered it (the script may redraw the row
	// before the test could read it; see the BUG below).
	if got := j.served(resp, row+` [data-field=kind]`); got != string(inspect.KindReentrant) {
		t.Errorf("kind rendered %q, want %q", got, inspect.KindReentrant)
	}
	if got := j.text(row + ` [data-testid=lock-holders]`); got != javaHolder+" ×3" {
		t.Errorf("holders shown %q, want %q", got, javaHolder+" ×3")
	}
	// Every row the page loses from here on is recorded: a held lock must
	// never blink out of the table.
	j.eval(`() => {
		window.__removedLocks = [];
		new MutationObserver(ms => ms.forEach(m => m.removedNodes.forEach(n => {
			if (n.dataset && n.dataset.lock !== undefined) window.__removedLocks.push(n.dataset.lock);
		}))).observe(document.querySelector("[data-testid=locks-body]"), {childList: true});
	}`, nil)
	first := leaseSeconds(t, j.text(row+` [data-testid=lock-pttl]`))
	redisLease := j.pttl(name).Seconds()
	if first > 50 || first < redisLease-3 || first > redisLease+3 {
		t.Errorf("lease shown %.1f s; Redis PTTL is %.1f s", first, redisLease)
	}
	// The countdown runs in the page: a second and a half later it shows
	// less, and still agrees with Redis.
	var later float64
	j.waitText("the lease to count down", row+` [data-testid=lock-pttl]`, 10*time.Second, func(s string) bool {
		if m := secondsText.FindStringSubmatch(s); m != nil {
			later, _ = strconv.ParseFloat(m[1], 64)
		}
		return later > 0 && later <= first-1.5
	})
	if r := j.pttl(name).Seconds(); later < r-3 || later > r+3 {
		t.Errorf("lease shown %.1f s; Redis PTTL is now %.1f s", later, r)
	}

	// By now live frames have covered more than one discovery period.
	j.waitLive(5)
	// The row never blinked out of the table and still says what it is
	// (live frames must not undo what the server rendered).
	if removed := j.eval(`() => window.__removedLocks`, nil); fmt.Sprint(removed) != "[]" {
		t.Errorf("rows removed from the table while their locks were held: %v", removed)
	}
	if kind := j.text(row + ` [data-field=kind]`); kind != string(inspect.KindReentrant) {
		t.Errorf("after live updates the kind shows %q, want %q", kind, inspect.KindReentrant)
	}

	// The detail page names the holder and its reentries, and the channel
	// Redisson's waiters listen on.
	j.clickTo(row + ` [data-testid=lock-link]`)
	if got := j.text(`[data-testid=lock-name]`); got != name {
		t.Fatalf("detail page is for %q, want %q", got, name)
	}
	if got := j.text(`[data-testid=holder-row] [data-testid=holder-id]`); got != javaHolder {
		t.Errorf("holder shown %q, want %q", got, javaHolder)
	}
	if got := j.text(`[data-testid=holder-row] [data-testid=holder-count]`); got != "3" {
		t.Errorf("reentry count shown %q, want 3", got)
	}
	if got := j.text(`[data-testid=lock-channel]`); got != "redisson_lock__channel:{"+name+"}" {
		t.Errorf("unlock channel shown %q", got)
	}
	leaseSeconds(t, j.text(`[data-testid=lock-detail] [data-testid=lock-pttl]`))

	// Looking changes nothing: the hash is exactly what the "Java" client wrote.
	if got := j.hgetall(name); len(got) != 1 || got[javaHolder] != "3" {
		t.Errorf("Redis hash after viewing = %v", got)
	}
}

// Journey 3: force-unlock. Open the lock, press the button, confirm: the
// holder's row is gone, the events page shows the release, the key was
// deleted in Redis, and a waiter blocked in store's Lock takes the lock.
func TestJourney3ForceUnlockWakesWaiter(t *testing.T) {
	j := newJourney(t)
	const name = "jobs:lock:nightly"
	// The stuck holder: a fixed one-minute lease, never renewed.
	stuck := store.New(j.rdb, nil).NewLock(name, &store.LockOptions{Owner: "crashed-1", Lease: time.Minute, NoWatchdog: true})
	if err := stuck.TryLock(j.ctx); err != nil {
		t.Fatal(err)
	}
	// The waiter would retry only after a minute on its own, so taking the
	// lock within seconds proves the force-unlock woke it.
	waiter := store.New(j.rdb, nil).NewLock(name, &store.LockOptions{Owner: "next-in-line", RetryInterval: time.Minute})
	got := make(chan error, 1)
	go func() { got <- waiter.Lock(j.ctx) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(j.ctx), 2*time.Second)
		defer cancel()
		waiter.Unlock(ctx)
	})
	redistest.EventuallyWithin(t, 5*time.Second, "the waiter's first attempt to be rejected", func() bool {
		return j.lockAttempts(name).Rejected >= 1
	})

	j.open("/locks")
	row := `[data-testid=lock-row][data-lock="` + name + `"]`
	if got := j.text(row + ` [data-testid=lock-holders]`); got != stuck.HolderID()+" ×1" {
		t.Fatalf("holders shown %q, want %s ×1", got, stuck.HolderID())
	}
	j.clickTo(row + ` [data-testid=lock-link]`)
	holderRow := `[data-testid=holder-row][data-holder="` + stuck.HolderID() + `"]`
	j.clickTo(holderRow + ` [data-testid=force-unlock-button]`)

	// The confirmation says exactly what will happen.
	if got := j.text(`[data-testid=confirm-name]`); got != name {
		t.Errorf("confirmation names key %q", got)
	}
	if got := j.text(`[data-testid=confirm-holder]`); got != stuck.HolderID() {
		t.Errorf("confirmation names holder %q", got)
	}
	if got := j.text(`[data-testid=confirm-channel]`); got != redistest.UnlockChannel(name) {
		t.Errorf("confirmation names channel %q", got)
	}
	select {
	case err := <-got:
		t.Fatalf("the waiter returned before anyone confirmed: %v", err)
	default:
	}

	keys := j.watchKey(name)
	j.fill(`[data-testid=force-unlock-reason]`, "e2e: holder crashed, lease is a minute")
	resp := j.clickTo(`[data-testid=force-unlock-confirm]`)
	if resp.Status() != 200 || j.pathOf() != "/locks" {
		t.Fatalf("confirm led to %s (%d), want the locks page", j.tab.URL(), resp.Status())
	}
	if flash := j.text(`[data-testid=flash]`); !strings.Contains(flash, name) || !strings.Contains(flash, "force-unlocked") {
		t.Errorf("flash after confirm = %q", flash)
	}

	// Redis: the key was deleted (all reentries at once), then the waiter
	// took it afresh.
	if op := keys.next(5 * time.Second); op != "del" {
		t.Errorf("first operation on %s after confirm = %q, want del", name, op)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter blocked in Lock did not take the lock within 10 s of the force-unlock")
	}
	if h := j.redissonFields(name); len(h) != 1 || h[waiter.HolderID()] != "1" {
		t.Errorf("Redis hash after hand-over = %v, want only %s = 1", h, waiter.HolderID())
	}
	if err := stuck.Unlock(j.ctx); !errors.Is(err, store.ErrNotHeld) {
		t.Errorf("the broken holder's own unlock = %v, want ErrNotHeld", err)
	}

	// The screen: the broken holder is nowhere; the lock, if listed, is the
	// waiter's (it may have been taken before the page rendered).
	j.open("/locks")
	for _, h := range j.allTexts(`[data-testid=lock-holders]`) {
		if strings.Contains(h, stuck.HolderID()) {
			t.Errorf("the locks page still shows the broken holder: %q", h)
		}
	}
	j.waitText("the waiter as the new holder", row+` [data-testid=lock-holders]`, 5*time.Second, func(s string) bool {
		return s == waiter.HolderID()+" ×1"
	})

	// The events page shows the release by the console, naming the holder.
	j.clickTo(`[data-testid=nav-events]`)
	ev := `[data-testid=event-row][data-event-type="force-unlock"]`
	if j.count(ev) != 1 {
		t.Fatalf("events page lists %d force-unlock events, want 1", j.count(ev))
	}
	if got := j.text(ev + ` [data-testid=event-name]`); got != name {
		t.Errorf("force-unlock event names %q", got)
	}
	if got := j.text(ev + ` [data-testid=event-detail]`); !strings.Contains(got, stuck.HolderID()) {
		t.Errorf("force-unlock event detail %q does not name the holder", got)
	}
}

// Journey 4: the lock changes hands between page load and the confirm
// click. The page reports the conflict and names the new holder, whose lock
// is left exactly as it was.
func TestJourney4ForceUnlockRaceLeavesNewHolder(t *testing.T) {
	j := newJourney(t)
	const name = "jobs:lock:race"
	const newHolder = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d:12"
	j.redissonLock(name, javaHolder, 1, time.Minute)

	j.open("/locks/" + url.PathEscape(name))
	j.clickTo(`[data-testid=holder-row][data-holder="` + javaHolder + `"] [data-testid=force-unlock-button]`)
	if got := j.text(`[data-testid=confirm-holder]`); got != javaHolder {
		t.Fatalf("confirmation names holder %q", got)
	}

	// Meanwhile the old holder released and another instance took the lock
	// twice (re-entrant), with its own lease.
	j.redissonLock(name, newHolder, 2, 45*time.Second)
	before := j.pttl(name)
	keys := j.watchKey(name)
	unlocks := j.rdb.Subscribe(j.ctx, redistest.UnlockChannel(name))
	t.Cleanup(func() { unlocks.Close() })
	if _, err := unlocks.Receive(j.ctx); err != nil {
		t.Fatal(err)
	}

	path := "/locks/" + url.PathEscape(name) + "/force-unlock"
	j.allowStatus(path, 409)
	j.fill(`[data-testid=force-unlock-reason]`, "e2e: holder crashed, lease is a minute")
	resp := j.clickTo(`[data-testid=force-unlock-confirm]`)
	if resp.Status() != 409 {
		t.Errorf("confirm answered %d, want 409", resp.Status())
	}
	if got := j.text(`[data-testid=error-status]`); got != "409" {
		t.Errorf("error page status %q", got)
	}
	if got := j.text(`[data-testid=error-message]`); !strings.Contains(got, name) || !strings.Contains(got, "no longer held") {
		t.Errorf("error message %q does not explain the conflict", got)
	}
	if got := j.text(`[data-testid=error-holder]`); !strings.Contains(got, newHolder) || !strings.Contains(got, "×2") {
		t.Errorf("error page names the current holder as %q, want %s ×2", got, newHolder)
	}

	// Redis: the new holder's lock is untouched — same field and count, the
	// lease still running down from where it was, nothing done to the key,
	// nobody told it was released.
	if h := j.hgetall(name); len(h) != 1 || h[newHolder] != "2" {
		t.Errorf("Redis hash after the lost race = %v, want only %s = 2", h, newHolder)
	}
	if after := j.pttl(name); after > before || after < before-5*time.Second {
		t.Errorf("PTTL went from %v to %v; the lease must be left alone", before, after)
	}
	if ops := keys.drain(300 * time.Millisecond); len(ops) > 0 {
		t.Errorf("the lost race still did %v to the key", ops)
	}
	select {
	case m := <-unlocks.Channel():
		t.Errorf("an unlock message %q was published although nothing was released", m.Payload)
	default:
	}

	// Back leads to the lock, now showing who really holds it.
	j.clickTo(`[data-testid=error-back]`)
	if got := j.text(`[data-testid=holder-row] [data-testid=holder-id]`); got != newHolder {
		t.Errorf("back on the lock page, holder shown %q, want %q", got, newHolder)
	}
	if got := j.text(`[data-testid=holder-row] [data-testid=holder-count]`); got != "2" {
		t.Errorf("back on the lock page, reentries shown %q, want 2", got)
	}
}
