package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/playwright-community/playwright-go"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// shot keeps a full-page screenshot of the tab as name.png in the
// directory LOCKWARDEN_SHOTS_DIR names; without it, nothing.
func (j *journey) shot(name string) {
	j.t.Helper()
	dir := os.Getenv("LOCKWARDEN_SHOTS_DIR")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		j.t.Fatal(err)
	}
	if _, err := j.tab.Screenshot(playwright.PageScreenshotOptions{Path: playwright.String(filepath.Join(dir, name+".png")),
		FullPage: playwright.Bool(true)}); err != nil {
		j.t.Errorf("screenshot %s: %v", name, err)
	}
}

// Journey: two services deadlock, as the demo's inventory and checkout
// do. The locks list sorted by contention puts them first with the
// waiter's current wait; the lock's page opens with why: deadlocked, who
// holds it, who waits, and the way out, whose link leads to the
// holder-checked force-unlock of the youngest hold. Once broken and let
// go, the lock's page says since when it is free and who held it last.
func TestJourneyWhyOnADeadlockedLock(t *testing.T) {
	j := newJourney(t)
	stock, cart := "demo:deadlock:stock", "demo:deadlock:cart"
	inv := store.New(j.rdb, &store.Options{App: "inventory-svc"})
	chk := store.New(j.rdb, &store.Options{App: "checkout-svc"})
	t.Cleanup(func() { inv.Close(); chk.Close() })
	invHolds, invWants := inv.NewLock(stock, &store.LockOptions{Owner: "reserve-1"}), inv.NewLock(cart, &store.LockOptions{Owner: "reserve-1"})
	chkHolds, chkWants := chk.NewLock(cart, &store.LockOptions{Owner: "order-9"}), chk.NewLock(stock, &store.LockOptions{Owner: "order-9"})
	if err := invHolds.Lock(j.ctx); err != nil {
		t.Fatal(err)
	}
	taken := j.redisNowMS()
	redistest.Eventually(t, "Redis time past inventory's hold", func() bool { return j.redisNowMS() > taken })
	if err := chkHolds.Lock(j.ctx); err != nil {
		t.Fatal(err)
	}
	j.unlockAtEnd(invWants, invHolds, chkWants, chkHolds)
	invDone, chkDone := make(chan error, 1), make(chan error, 1)
	go func() { invDone <- invWants.Lock(j.ctx) }()
	go func() { chkDone <- chkWants.Lock(j.ctx) }()
	j.wrote(stock, "locks")
	j.wrote(cart, "locks")
	j.makeLockIdle("demo:lock:calm")

	// Stuck locks lead the contention order, with their waiter's wait.
	j.open("/locks?sort=contention")
	first := j.waitText("a deadlocked lock first", `[data-testid=lock-row] [data-testid=lock-link]`, 15*time.Second,
		func(s string) bool { return s == stock || s == cart })
	if got := j.text(`[data-testid=lock-row] [data-testid=lock-longest-wait]`); got == "–" {
		t.Errorf("%s heads the list without its waiter's wait", first)
	}

	j.open("/locks/" + stock)
	state := j.waitText("the why panel says deadlocked", `[data-testid=why-state]`, 15*time.Second,
		func(s string) bool { return s == "deadlocked" })
	answer := j.words(`[data-testid=why-answer]`)
	for _, want := range []string{"inventory-svc on ", "owner reserve-1", "checkout-svc on ", "part of a deadlock", "youngest hold", cart} {
		if !strings.Contains(answer, want) {
			t.Errorf("why (%s) does not say %q: %s", state, want, answer)
		}
	}
	// A few seconds on, the waiter's wait shows as the stuck lock's.
	j.waitJS("the longest wait past 2 s", `() => { const s = Number(document.querySelector('[data-testid=lock-detail] [data-field=longest-wait]').dataset.waitingSince); return s > 0 && Date.now() - s > 2500 }`, nil, 15*time.Second)
	j.open("/locks/" + stock)
	j.waitLive(1)
	j.shot("stuck-lock")

	// The way out: the youngest hold, checkout's on cart, holder-checked.
	action := `[data-testid=why-action][data-action=force-unlock] [data-testid=why-action-link]`
	if got := j.text(action); !strings.Contains(got, "checkout-svc") {
		t.Errorf("the first way out is %q; want the youngest hold, checkout-svc's", got)
	}
	j.clickTo(action)
	if who := j.text(`[data-testid=confirm-holder-who]`); !strings.HasPrefix(who, "checkout-svc on ") {
		t.Errorf("the confirmation names the holder %q", who)
	}
	j.fill(`[data-testid=force-unlock-reason]`, "e2e: break the cycle at its youngest hold")
	j.clickTo(`[data-testid=force-unlock-confirm]`)
	if err := <-invDone; err != nil {
		t.Fatalf("inventory's wait: %v", err)
	}
	for _, l := range []*store.Lock{invWants, invHolds} {
		if err := l.Unlock(j.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-chkDone; err != nil {
		t.Fatalf("checkout's wait: %v", err)
	}
	if err := chkWants.Unlock(j.ctx); err != nil {
		t.Fatal(err)
	}

	// Free now: the page answers, not a 404.
	redistest.EventuallyWithin(t, 15*time.Second, "the console sees the cart free", func() bool {
		var w struct{ State string }
		j.apiJSON("/api/why/"+cart, &w)
		return w.State == "free"
	})
	if resp := j.open("/locks/" + cart); resp.Status() != 200 {
		t.Fatalf("the free lock's page: %d", resp.Status())
	}
	if got := j.words(`[data-testid=why-answer]`); !strings.Contains(got, "free since") || !strings.Contains(got, "last held by") {
		t.Errorf("the free lock's why: %q", got)
	}
}

// makeLockIdle takes a lock nobody waits for, held until the test ends.
func (j *journey) makeLockIdle(name string) {
	j.t.Helper()
	j.holdLock(store.New(j.rdb, &store.Options{NoRegistry: true}), name, "calm")
}

// Journey: the on-call engineer knows the application, not the lock. The
// search box finds the locks checkout-svc holds; a search that finds
// nothing says what it looked for and among how many; at phone width the
// list fits the screen. The release-all of that client names it and warns
// that it is alive.
func TestJourneySearchByApp(t *testing.T) {
	j := newJourney(t)
	chk := store.New(j.rdb, &store.Options{App: "checkout-svc", Version: "v2.0.1"})
	bill := store.New(j.rdb, &store.Options{App: "billing-svc"})
	t.Cleanup(func() { chk.Close(); bill.Close() })
	j.holdLock(chk, "orders:lock:1", "worker-1")
	j.holdLock(chk, "orders:lock:2", "worker-2")
	j.holdLock(bill, "invoices:lock:7", "nightly")
	redistest.EventuallyWithin(t, 15*time.Second, "the console names the holders", func() bool {
		var body struct{ Locks []struct{ Name string } }
		j.apiJSON("/api/locks?q=checkout-svc", &body)
		return len(body.Locks) == 2
	})

	j.open("/locks")
	j.fill(`[data-testid=search-input]`, "checkout-svc")
	j.clickTo(`[data-testid=list-filter] button[type=submit]`)
	rows := j.allTexts(`[data-testid=lock-row] [data-testid=lock-link]`)
	if strings.Join(rows, " ") != "orders:lock:1 orders:lock:2" {
		t.Errorf("searching checkout-svc listed %v", rows)
	}
	for _, who := range j.allTexts(`[data-testid=lock-row] [data-testid=lock-holders-who]`) {
		if !strings.HasPrefix(who, "checkout-svc on ") {
			t.Errorf("a row found by the app is held by %q", who)
		}
	}

	j.fill(`[data-testid=search-input]`, "nobody-runs-this")
	j.clickTo(`[data-testid=list-filter] button[type=submit]`)
	if j.hidden(`[data-testid=locks-empty]`) {
		t.Fatal("an empty search shows no message")
	}
	if got := j.words(`[data-testid=locks-empty]`); !strings.Contains(got, `No lock matches "nobody-runs-this"`) || !strings.Contains(got, "among the 3 locks held") {
		t.Errorf("the empty search says %q", got)
	}

	// A phone: the list scrolls inside its box; the page does not.
	if err := j.tab.SetViewportSize(390, 844); err != nil {
		t.Fatal(err)
	}
	j.open("/locks")
	if w := j.eval(`() => document.documentElement.scrollWidth - window.innerWidth`, nil); toInt(w) > 0 {
		t.Errorf("at 390 px the page is %v px wider than the screen", w)
	}
	j.shot("locks-phone")
	if err := j.tab.SetViewportSize(1280, 900); err != nil {
		t.Fatal(err)
	}

	j.open("/clients/" + chk.ID() + "/release-all")
	if got := j.text(`[data-testid=release-all-title]`); !strings.HasPrefix(got, "Release everything checkout-svc on ") {
		t.Errorf("release-all title %q", got)
	}
	if j.hidden(`[data-testid=release-all-alive-warning]`) {
		t.Error("no warning that checkout-svc is alive")
	}
	if n := j.count(`[data-testid=release-all-step]`); n != 2 {
		t.Errorf("the release-all lists %d locks, want 2", n)
	}
	j.shot("release-all")
}

func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return 0
}

// Journey: an edit without a reason is refused, saying so under the
// reason, and changes nothing; an absurd capacity is refused with the
// bounds; with both right, the confirmation shows the what-if in a token
// bucket's words, and only "Change it" changes the bucket, the audit
// trail keeping the reason.
func TestJourneyEditRefusedWithoutAReason(t *testing.T) {
	j := newJourney(t)
	name := "rl:partner"
	j.bucket(name, 20, 100)
	before := j.hgetall(name)
	j.open("/limiters/" + name)
	path := j.pathOf()
	j.allowStatus(path, 400)
	if got := j.text(`[data-testid=limiter-rule-now]`); !strings.Contains(got, "capacity 20, refill one every 100 ms (10 per second)") {
		t.Errorf("the form says the rule now is %q", got)
	}

	j.fill(`[data-testid=input-rate]`, "40")
	j.fill(`[data-testid=input-interval_ms]`, "25")
	if resp := j.clickTo(`[data-testid=limiter-save]`); resp.Status() != 400 {
		t.Errorf("an edit without a reason answered %d, want 400", resp.Status())
	}
	if got := j.text(`[data-testid=field-reason] [data-testid=error-reason]`); !strings.Contains(got, "reason is required") {
		t.Errorf("under the reason: %q", got)
	}
	if after := j.hgetall(name); after["max_permits"] != before["max_permits"] || after["interval"] != before["interval"] {
		t.Fatalf("a refused edit changed the bucket: %v -> %v", before, after)
	}

	j.fill(`[data-testid=input-rate]`, "1000000000000")
	j.fill(`[data-testid=input-reason]`, "e2e: partner launch")
	j.clickTo(`[data-testid=limiter-save]`)
	if got := j.text(`[data-testid=error-rate]`); !strings.Contains(got, "capacity") || !strings.Contains(got, "1,000,000") {
		t.Errorf("an absurd capacity is refused with %q", got)
	}

	j.fill(`[data-testid=input-rate]`, "40")
	j.clickTo(`[data-testid=limiter-save]`)
	if got := j.text(`[data-testid=limiter-confirm-page] [data-testid=whatif-result] h3`); !strings.Contains(got, "capacity 40, refill one every 25 ms (40 per second)") {
		t.Errorf("the what-if says %q", got)
	}
	if after := j.hgetall(name); after["max_permits"] != before["max_permits"] {
		t.Fatal("the confirmation step changed the bucket")
	}
	j.clickTo(`[data-testid=limiter-confirm]`)
	if h := j.hgetall(name); h["max_permits"] != "40" || h["interval"] != "25" {
		t.Errorf("after Change it: %v", h)
	}
	var audit struct {
		Records []struct{ Action, Target, Reason, Outcome string }
	}
	j.apiJSON("/api/audit", &audit)
	if len(audit.Records) == 0 || audit.Records[0].Action != "modify" || audit.Records[0].Reason != "e2e: partner launch" {
		t.Errorf("the audit trail's newest record %+v; want the edit with its reason", audit.Records)
	}
}
