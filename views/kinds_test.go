package views

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// Each lock and limiter kind renders its own state, and nothing a kind
// does not have (no fabricated rejections, no channel for token locks).

func TestViewKindsLockDetail(t *testing.T) {
	rw := LockRow{Name: "rw<1>", Kind: KindRWLock, Mode: "read", PTTLMS: 5000, Channel: "redisson_rwlock:{rw<1>}",
		Holders: []HolderRow{{ID: "u:1", Count: 2, Mode: "read", LeaseMS: 4000}, {ID: "u:2", Count: 1, Mode: "read"}}}
	doc := render(t, LockDetail(LockDetailPage{Layout: layout(NavLocks), Lock: rw, Channel: rw.Channel}))
	if text(t, doc.Selection, "lock-mode") != "read" || doc.Find(tid("holder-mode")).Length() != 2 {
		t.Errorf("rwlock mode not shown")
	}
	if got := strings.TrimSpace(doc.Find(tid("holder-lease")).First().Text()); got != "4.0 s" {
		t.Errorf("reader lease %q", got)
	}
	if got := strings.TrimSpace(doc.Find(tid("force-unlock-button")).First().Text()); got != "Remove this holder…" {
		t.Errorf("rwlock action %q", got)
	}

	fair := LockRow{Name: "f", Kind: KindFairLock, PTTLMS: 1000, Channel: "redisson_lock__channel:{f}", WaitersTotal: 3,
		Holders: []HolderRow{{ID: "u:1", Count: 1}},
		Waiters: []WaiterRow{{ID: "u:9", RemainingMS: -5, Channel: "redisson_lock__channel:{f}:u:9"},
			{ID: "u:8", RemainingMS: 30000, Deadline: at.Add(30 * time.Second), Channel: "redisson_lock__channel:{f}:u:8"}}}
	doc = render(t, LockDetail(LockDetailPage{Layout: layout(NavLocks), Lock: fair, Channel: fair.Channel}))
	rows := doc.Find(tid("waiter-row"))
	if rows.Length() != 2 || attr(t, rows.First(), "data-stale") != "true" || attr(t, rows.Last(), "data-stale") != "false" {
		t.Fatalf("waiters %d", rows.Length())
	}
	if text(t, rows.First(), "waiter-remaining") != "timed out (stale)" || text(t, rows.Last(), "waiter-remaining") != "30.0 s" ||
		text(t, rows.Last(), "waiter-channel") != "redisson_lock__channel:{f}:u:8" {
		t.Errorf("waiter cells %q", rows.Text())
	}
	if text(t, doc.Selection, "waiters-total") != "3" || doc.Find(tid("waiters-truncated")).Length() != 1 {
		t.Errorf("queue length not shown")
	}

	fenced := LockRow{Name: "x", Kind: KindFencedLock, FencingToken: 77, Holders: []HolderRow{{ID: "u:1", Count: 1}}}
	doc = render(t, LockDetail(LockDetailPage{Layout: layout(NavLocks), Lock: fenced, Channel: "c"}))
	if text(t, doc.Selection, "lock-fencing-token") != "77" {
		t.Errorf("fencing token")
	}

	tok := LockRow{Name: "t", Kind: KindTokenLock, PTTLMS: -1, Holders: []HolderRow{{ID: "f00d", Count: 1}}}
	doc = render(t, LockDetail(LockDetailPage{Layout: layout(NavLocks), Lock: tok}))
	if doc.Find(tid("lock-channel")).Length() != 0 || doc.Find(tid("lock-channel-none")).Length() != 1 ||
		!strings.Contains(doc.Find(tid("holders-table")).Find("th").First().Text(), "Token") {
		t.Errorf("token lock page: %q", doc.Find(tid("lock-detail")).Text())
	}
}

func TestViewKindsForceUnlockPlans(t *testing.T) {
	// A read-write holder among others: its field goes, the rest stays,
	// nothing is published.
	c := render(t, ForceUnlockConfirm(ForceUnlockConfirmPage{Layout: layout(NavLocks), Name: "rw", Kind: KindRWLock, Holder: "u:1",
		Count: 2, RemovesField: true, Deletes: []string{"{rw}:u:1:rwlock_timeout:1"}, Summary: "removes u:1; the other 1 holder(s) keep the lock"}))
	page := one(t, c.Selection, "force-unlock-confirm-page")
	if text(t, page, "confirm-name") != "rw" || text(t, page, "confirm-holder") != "u:1" || text(t, page, "confirm-count") != "2" {
		t.Errorf("names %q", page.Text())
	}
	if page.Find(tid("confirm-removes-field")).Length() != 1 || page.Find(tid("confirm-no-publish")).Length() != 1 ||
		page.Find(tid("confirm-channel")).Length() != 0 || text(t, page, "confirm-delete") != "{rw}:u:1:rwlock_timeout:1" {
		t.Errorf("rwlock plan %q", page.Text())
	}
	if !strings.Contains(text(t, page, "confirm-summary"), "keep the lock") {
		t.Errorf("summary %q", text(t, page, "confirm-summary"))
	}

	// A fenced lock: deleted, "0" published, the token key kept.
	c = render(t, ForceUnlockConfirm(ForceUnlockConfirmPage{Layout: layout(NavLocks), Name: "f", Kind: KindFencedLock, Holder: "u:1",
		Count: 1, Channel: "redisson_lock__channel:{f}", Message: "0", Keeps: []string{"redisson_lock_token:{f}"}}))
	page = one(t, c.Selection, "force-unlock-confirm-page")
	if text(t, page, "confirm-keep") != "redisson_lock_token:{f}" || text(t, page, "confirm-message") != `"0"` ||
		page.Find(tid("confirm-removes-field")).Length() != 0 {
		t.Errorf("fenced plan %q", page.Text())
	}
}

func TestViewKindsLimiters(t *testing.T) {
	red := LimiterRow{Name: "r<b>", Kind: KindRedissonLimiter, Rate: 10, IntervalMS: 60000, PerSecond: 10.0 / 60,
		Available: 6, RejectionsHidden: true, Grants: 4, GrantsKnown: true, Algorithm: "sliding-window", NextFreeInMS: 59000,
		Window: Counts{Acquired: 2, Rejected: 0, Errors: 1}}
	counter := LimiterRow{Name: "ip:1", Kind: KindCounter, Count: 5, Limit: 3, LimitKnown: true, TTLMS: -1,
		RejectionsHidden: true, Grants: 3, GrantsKnown: true}
	unknown := LimiterRow{Name: "ip:2", Kind: KindCounter, Count: 2, TTLMS: 4000, RejectionsHidden: true, AvailableUnknown: true}
	bucket := LimiterRow{Name: "tb", Kind: KindTokenBucket, Rate: 500, IntervalMS: 2, PerSecond: 500, Available: 3,
		Window: Counts{Acquired: 5, Rejected: 7}}

	doc := render(t, Limiters(LimitersPage{Layout: layout(NavLimiters), Limiters: []LimiterRow{red, counter, unknown, bucket}}))
	rows := doc.Find(tid("limiter-row"))
	if rows.Length() != 4 {
		t.Fatalf("rows %d", rows.Length())
	}
	// A sparkline never draws a rejected line nobody measured.
	for i, wantLine := range []bool{false, false, false, true} {
		got := rows.Eq(i).Find(`polyline[data-series="rejected"]`).Length() == 1
		if got != wantLine {
			t.Errorf("row %d: rejected sparkline drawn = %v, want %v", i, got, wantLine)
		}
	}
	for i, want := range []string{"4 granted · rejections not visible", "3 admitted · rejections not visible", "rejections not visible (limit not registered)"} {
		r := rows.Eq(i)
		if r.Find(`[data-field="rejected"]`).Length() != 0 {
			t.Errorf("row %d shows a rejected count", i)
		}
		if got := strings.Join(strings.Fields(text(t, r, "rejected-hidden")), " "); got != want {
			t.Errorf("row %d rejected cell %q, want %q", i, got, want)
		}
	}
	if text(t, rows.Eq(3), "rejected") != "7" {
		t.Errorf("a token bucket's rejections must show")
	}
	if text(t, rows.Eq(1), "limiter-rate") != "3" || text(t, rows.Eq(2), "limiter-rate") != "not registered" ||
		text(t, rows.Eq(2), "limiter-available") != "unknown" || attr(t, rows.Eq(2).Find(tid("limiter-available")), "data-field") != "available-unknown" {
		t.Errorf("counter cells %q / %q", rows.Eq(1).Text(), rows.Eq(2).Text())
	}

	// The Redisson page: the notice, both edit choices described, no
	// rejected count anywhere, "–" in the rolling table's rejected column.
	d := render(t, LimiterDetail(LimiterDetailPage{Layout: layout(NavLimiters), Limiter: red,
		KeepText: "Keeps the grants: …", ResetText: "Resets the window …",
		Rolling: []RollingRow{{At: at, Acquired: 1, Rejected: 0, Errors: 0}},
		Form:    EditForm{KeepState: KeepStateKeep}}))
	if !strings.Contains(text(t, d.Selection, "rejections-hidden"), "Rejections by Redisson clients are not visible") {
		t.Errorf("no notice")
	}
	if d.Find(`[data-field="rejected"]`).Length() != 0 || d.Find(tid("rejected")).Length() != 0 {
		t.Errorf("a rejected count is shown for a Redisson limiter")
	}
	if text(t, d.Selection, "limiter-algorithm") != "sliding window (Redisson 3.13.3 and later)" || text(t, d.Selection, "limiter-grants") != "4" ||
		text(t, d.Selection, "limiter-next-free") != "59.0 s" {
		t.Errorf("facts %q", d.Find("dl").Text())
	}
	if text(t, d.Selection, "keep-state-keep-text") != "Keeps the grants: …" || text(t, d.Selection, "keep-state-reset-text") != "Resets the window …" {
		t.Errorf("choice texts")
	}
	if _, ok := one(t, d.Selection, "keep-state-keep").Attr("checked"); !ok {
		t.Errorf("the submitted choice is not kept")
	}
	if _, ok := one(t, d.Selection, "keep-state-reset").Attr("checked"); ok {
		t.Errorf("both choices checked")
	}
	cells := d.Find(tid("rolling-row")).First().Find("td")
	if strings.TrimSpace(cells.Eq(2).Text()) != "–" || attr(t, one(t, d.Selection, "rolling-body"), "data-rejections-hidden") != "true" {
		t.Errorf("rolling rejected cell %q", cells.Eq(2).Text())
	}

	// The counter page: count, limit, stuck window, a reset form and no
	// rate edit.
	d = render(t, LimiterDetail(LimiterDetailPage{Layout: layout(NavLimiters), Limiter: counter}))
	if text(t, d.Selection, "limiter-count") != "5" || text(t, d.Selection, "limiter-limit") != "3" ||
		!strings.HasPrefix(text(t, d.Selection, "limiter-ttl"), "no expiry (stuck)") {
		t.Errorf("counter facts %q", d.Find("dl").Text())
	}
	if d.Find(tid("limiter-form")).Length() != 0 || attr(t, one(t, d.Selection, "counter-reset-form"), "action") != ResetCounterURL(counter.Name) {
		t.Errorf("counter forms")
	}
	d = render(t, LimiterDetail(LimiterDetailPage{Layout: layout(NavLimiters), Limiter: unknown}))
	if text(t, d.Selection, "limiter-limit") != "limit not registered" {
		t.Errorf("unknown limit %q", text(t, d.Selection, "limiter-limit"))
	}
	// A viewer sees no reset form.
	ro := layout(NavLimiters)
	ro.ReadOnly = true
	if render(t, LimiterDetail(LimiterDetailPage{Layout: ro, Limiter: counter})).Find(tid("counter-reset-form")).Length() != 0 {
		t.Errorf("read-only page offers a reset")
	}

	// The wall: grants in place of rejected, no ratio.
	w := render(t, Wall(WallPage{Layout: layout(NavWall), Limiters: []LimiterRow{red, bucket}}))
	tiles := w.Find(tid("wall-tile"))
	if tiles.Eq(0).Find(`[data-field="rejected"], [data-field="ratio"]`).Length() != 0 || text(t, tiles.Eq(0), "limiter-grants") != "4" ||
		text(t, tiles.Eq(0), "rejected-hidden") != "–" {
		t.Errorf("Redisson tile %q", tiles.Eq(0).Text())
	}
	if text(t, tiles.Eq(1), "rejected") != "7" {
		t.Errorf("bucket tile")
	}
}

func TestViewKindsLayoutAssets(t *testing.T) {
	doc := render(t, Locks(LocksPage{Layout: layout(NavLocks)}))
	var srcs []string
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		srcs = append(srcs, s.AttrOr("src", "inline"))
		if _, ok := s.Attr("defer"); !ok {
			t.Errorf("%s is not deferred: order would not be kept", s.AttrOr("src", ""))
		}
	})
	var want []string
	for _, s := range append(slices.Clone(VendorScripts), Scripts...) {
		want = append(want, StaticPrefix+s)
	}
	if strings.Join(srcs, ",") != strings.Join(want, ",") {
		t.Errorf("scripts %v, want %v", srcs, want)
	}
	if attr(t, doc.Find(`link[rel="icon"]`), "href") != StaticPrefix+"favicon.svg" {
		t.Errorf("no favicon link")
	}
	if attr(t, doc.Find("body"), "data-rendered-at") != epochMS(at) {
		t.Errorf("body lacks the render time")
	}
}
