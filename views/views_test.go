package views

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"
)

// hostile names must come out as the same text and as one escaped segment.
var hostile = []string{
	"<script>alert(1)</script>",
	`quote"s and 'single'`,
	"a/b",
	"{x}:y",
	"sp ace",
	"ключ",
	"%41",
	"javascript:alert(1)",
	"a?b#c&d=e",
}

var at = time.Date(2025, 3, 4, 5, 6, 7, 800_000_000, time.UTC)

func layout(active string) Layout {
	return Layout{Title: "T", Active: active, Now: at}
}

func render(t *testing.T, c templ.Component) *goquery.Document {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	doc, err := goquery.NewDocumentFromReader(&buf)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return doc
}

func tid(id string) string { return `[data-testid="` + id + `"]` }

func one(t *testing.T, s *goquery.Selection, id string) *goquery.Selection {
	t.Helper()
	got := s.Find(tid(id))
	if got.Length() != 1 {
		t.Fatalf("want one %s, got %d", id, got.Length())
	}
	return got
}

func text(t *testing.T, s *goquery.Selection, id string) string {
	t.Helper()
	return strings.TrimSpace(one(t, s, id).Text())
}

func attr(t *testing.T, s *goquery.Selection, name string) string {
	t.Helper()
	v, ok := s.Attr(name)
	if !ok {
		t.Fatalf("missing attribute %s", name)
	}
	return v
}

func lockRows() []LockRow {
	rows := make([]LockRow, len(hostile))
	for i, n := range hostile {
		rows[i] = LockRow{
			Name:      n,
			Kind:      "reentrant",
			Holders:   []HolderRow{{ID: "uuid-" + n + ":1", Count: int64(i + 1)}},
			PTTLMS:    int64(1000 * (i + 1)),
			FirstSeen: at.Add(-90 * time.Second),
		}
	}
	return rows
}

func limiterRows() []LimiterRow {
	rows := make([]LimiterRow, len(hostile))
	for i, n := range hostile {
		rows[i] = LimiterRow{
			Name: n, Kind: "token-bucket", Rate: 500, IntervalMS: 2, PerSecond: 500,
			Available: int64(10 + i),
			Window:    Counts{Acquired: int64(100 + i), Rejected: int64(i), Errors: 1},
			Spark:     []Counts{{Acquired: 1}, {Acquired: 4, Rejected: 2}},
		}
	}
	return rows
}

func events() []EventRow {
	var out []EventRow
	for i, n := range hostile {
		out = append(out,
			EventRow{Type: "unlock", Name: n, Channel: "redisson_lock__channel:{" + n + "}", Message: "0", At: at.Add(-time.Duration(i) * time.Second)},
			EventRow{Type: "force-unlock", Name: n, Holder: "h:" + n, At: at},
			EventRow{Type: "expired", Name: n, At: at})
	}
	return out
}

// pages renders every screen with hostile data; the walk tests use it so a
// new page is checked by adding it here.
func pages() map[string]templ.Component {
	lock := lockRows()[0]
	lim := limiterRows()[0]
	signedIn := layout(NavOverview)
	signedIn.Role, signedIn.CanSignOut, signedIn.Flash = "admin", true, "<b>flash</b>"
	return map[string]templ.Component{
		"overview": Overview(OverviewPage{Layout: signedIn, LockCount: 3, LimiterCount: 2, Busiest: limiterRows(), Events: events()}),
		"locks":    Locks(LocksPage{Layout: layout(NavLocks), Match: `*"<b>`, Locks: lockRows()}),
		"lock":     LockDetail(LockDetailPage{Layout: layout(NavLocks), Lock: lock, Channel: "redisson_lock__channel:{" + lock.Name + "}", Stats: Counts{1, 2, 3}}),
		"confirm":  ForceUnlockConfirm(ForceUnlockConfirmPage{Layout: layout(NavLocks), Name: lock.Name, Holder: lock.Holders[0].ID, Channel: "ch<i>", Count: 2}),
		"limiters": Limiters(LimitersPage{Layout: layout(NavLimiters), Limiters: limiterRows()}),
		"limiter": LimiterDetail(LimiterDetailPage{Layout: layout(NavLimiters), Limiter: lim,
			Form:    EditForm{Rate: "<x>", IntervalMS: "-1", Errors: map[string]string{FieldRate: "rate <must> be a whole number", FieldIntervalMS: "interval_ms must be > 0", "": "nothing changed"}},
			Rolling: []RollingRow{{At: at, Acquired: 5}, {At: at.Add(-200 * time.Millisecond), Acquired: 4}}}),
		"events": Events(EventsPage{Layout: layout(NavEvents), Events: events()}),
		"wall":   Wall(WallPage{Layout: Layout{Title: "Wall", RedisDown: true}, Limiters: limiterRows(), LockCount: 7, Events: events()}),
		"error":  ErrorView(ErrorPage{Layout: Layout{Title: "Conflict", Flash: "<b>flash</b>", FlashKind: FlashError}, Status: 409, Message: "held by <someone>", Holders: lock.Holders, Back: LockURL(lock.Name)}),
		"login":  Login(LoginPage{Layout: layout(""), Next: "/locks?match=<b>", Error: "<b>bad</b>"}),
		"audit":  Audit(AuditPage{Layout: layout(NavAudit), Records: []AuditRow{{Action: "force-unlock", Target: lock.Name, Reason: "<b>why</b>"}}}),
	}
}

func TestViewNoInlineScriptStyleOrHandlers(t *testing.T) {
	for name, c := range pages() {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := c.Render(context.Background(), &buf); err != nil {
				t.Fatal(err)
			}
			raw := buf.String()
			if strings.Contains(raw, "<script>alert") || strings.Contains(raw, "<b>") || strings.Contains(raw, "<someone>") {
				t.Errorf("unescaped hostile text in output")
			}
			doc, err := goquery.NewDocumentFromReader(strings.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if doc.Find("style").Length() != 0 {
				t.Errorf("inline <style> element")
			}
			doc.Find("script").Each(func(_ int, s *goquery.Selection) {
				if src, ok := s.Attr("src"); !ok || src == "" || strings.TrimSpace(s.Text()) != "" {
					t.Errorf("inline script: %q", s.Text())
				}
			})
			doc.Find("*").Each(func(_ int, s *goquery.Selection) {
				for _, a := range s.Nodes[0].Attr {
					k := strings.ToLower(a.Key)
					if k == "style" || strings.HasPrefix(k, "on") {
						t.Errorf("<%s> has inline %s=%q", goquery.NodeName(s), a.Key, a.Val)
					}
					if (k == "href" || k == "action" || k == "src") && !strings.HasPrefix(a.Val, "/") {
						t.Errorf("<%s %s=%q> is not a site path", goquery.NodeName(s), k, a.Val)
					}
				}
			})
			if doc.Find("[data-testid]").First().Length() == 0 {
				t.Errorf("no data-testid at all")
			}
		})
	}
}

// Cross-origin protection needs no token, so no form carries one (a
// stale hidden field would only leak into logs).
func TestViewPostFormsCarryNoToken(t *testing.T) {
	posts := 0
	for name, c := range pages() {
		doc := render(t, c)
		doc.Find("form").Each(func(_ int, f *goquery.Selection) {
			if f.Find(`input[name="_csrf"]`).Length() != 0 {
				t.Errorf("%s: form still carries _csrf", name)
			}
			if strings.ToLower(f.AttrOr("method", "get")) == "post" {
				posts++
			}
		})
	}
	if posts != 4 {
		t.Errorf("want 4 POST forms (sign-out, limiter edit, force-unlock confirm, sign-in), got %d", posts)
	}
}

func TestViewHostileNamesRoundTrip(t *testing.T) {
	check := func(t *testing.T, doc *goquery.Document, rowID, linkID, dataAttr, prefix string) {
		rows := doc.Find(tid(rowID))
		if rows.Length() != len(hostile) {
			t.Fatalf("want %d %s, got %d", len(hostile), rowID, rows.Length())
		}
		rows.Each(func(i int, row *goquery.Selection) {
			name := hostile[i]
			if got := attr(t, row, dataAttr); got != name {
				t.Errorf("%s = %q, want %q", dataAttr, got, name)
			}
			link := one(t, row, linkID)
			if got := strings.TrimSpace(link.Text()); got != name {
				t.Errorf("link text %q, want %q", got, name)
			}
			href := attr(t, link, "href")
			if !strings.HasPrefix(href, prefix) {
				t.Fatalf("href %q lacks %q", href, prefix)
			}
			seg := strings.TrimPrefix(href, prefix)
			if strings.ContainsAny(seg, "/?# <>\"'") {
				t.Errorf("href segment %q is not escaped", seg)
			}
			if got, err := url.PathUnescape(seg); err != nil || got != name {
				t.Errorf("href %q unescapes to %q (%v), want %q", href, got, err, name)
			}
		})
	}
	t.Run("locks", func(t *testing.T) {
		doc := render(t, Locks(LocksPage{Layout: layout(NavLocks), Locks: lockRows()}))
		check(t, doc, "lock-row", "lock-link", "data-lock", "/locks/")
	})
	t.Run("limiters", func(t *testing.T) {
		doc := render(t, Limiters(LimitersPage{Layout: layout(NavLimiters), Limiters: limiterRows()}))
		check(t, doc, "limiter-row", "limiter-link", "data-limiter", "/limiters/")
	})
	t.Run("wall", func(t *testing.T) {
		doc := render(t, Wall(WallPage{Limiters: limiterRows()}))
		tiles := doc.Find(tid("wall-tile"))
		if tiles.Length() != len(hostile) {
			t.Fatalf("tiles: %d", tiles.Length())
		}
		tiles.Each(func(i int, s *goquery.Selection) {
			if got := text(t, s, "tile-name"); got != hostile[i] {
				t.Errorf("tile name %q, want %q", got, hostile[i])
			}
		})
	})
}

func TestViewURLHelpers(t *testing.T) {
	for _, n := range hostile {
		for _, u := range []string{LockURL(n), LimiterURL(n)} {
			seg := u[strings.LastIndexByte(u, '/')+1:]
			if got, err := url.PathUnescape(seg); err != nil || got != n {
				t.Errorf("%q: %q -> %q %v", n, u, got, err)
			}
		}
		f := ForceUnlockURL(n)
		if !strings.HasPrefix(f, LockURL(n)+"/") || !strings.HasSuffix(f, "/force-unlock") {
			t.Errorf("force-unlock url %q", f)
		}
	}
}

func TestViewLocksTable(t *testing.T) {
	doc := render(t, Locks(LocksPage{Layout: layout(NavLocks), Match: "order:*", Locks: lockRows()}))
	if got := text(t, doc.Selection, "lock-count"); got != itoa(int64(len(hostile))) {
		t.Errorf("lock-count %q", got)
	}
	body := one(t, doc.Selection, "locks-body")
	if attr(t, body, "data-match") != "order:*" {
		t.Errorf("data-match missing")
	}
	if attr(t, one(t, doc.Selection, "match-input"), "value") != "order:*" {
		t.Errorf("match input not prefilled")
	}
	if _, hidden := one(t, doc.Selection, "locks-empty").Attr("hidden"); !hidden {
		t.Errorf("empty notice shown beside rows")
	}
	row := doc.Find(tid("lock-row")).Eq(2)
	if got := text(t, row, "lock-holders"); got != "uuid-a/b:1 ×3" {
		t.Errorf("holders %q", got)
	}
	pttl := one(t, row, "lock-pttl")
	if strings.TrimSpace(pttl.Text()) != "3.0 s" || attr(t, pttl, "data-pttl-ms") != "3000" {
		t.Errorf("pttl %q %q", pttl.Text(), pttl.AttrOr("data-pttl-ms", ""))
	}
	age := row.Find(`[data-field="age-text"]`)
	if strings.TrimSpace(age.Text()) != "1 min 30 s" {
		t.Errorf("age %q", age.Text())
	}
	if nav := one(t, doc.Selection, "nav-locks"); nav.AttrOr("aria-current", "") != "page" {
		t.Errorf("active nav not marked")
	}

	empty := render(t, Locks(LocksPage{Layout: layout(NavLocks)}))
	if _, hidden := one(t, empty.Selection, "locks-empty").Attr("hidden"); hidden {
		t.Errorf("empty notice hidden without rows")
	}
}

func TestViewLockDetailAndConfirm(t *testing.T) {
	name := "<script>alert(1)</script>"
	lock := LockRow{Name: name, Kind: "reentrant", PTTLMS: -1,
		Holders: []HolderRow{{ID: "u1:7", Count: 2}, {ID: `u2:"x"`, Count: 1}}}
	doc := render(t, LockDetail(LockDetailPage{Layout: layout(NavLocks), Lock: lock, Channel: "redisson_lock__channel:{" + name + "}", Stats: Counts{4, 5, 6}}))
	if text(t, doc.Selection, "lock-name") != name {
		t.Errorf("name")
	}
	if text(t, doc.Selection, "lock-pttl") != "no expiry" {
		t.Errorf("pttl %q", text(t, doc.Selection, "lock-pttl"))
	}
	if text(t, doc.Selection, "lock-channel") != "redisson_lock__channel:{"+name+"}" {
		t.Errorf("channel")
	}
	if text(t, doc.Selection, "rejected") != "5" {
		t.Errorf("stats")
	}
	if _, hidden := one(t, doc.Selection, "lock-gone").Attr("hidden"); !hidden {
		t.Errorf("gone notice visible")
	}
	forms := doc.Find(tid("force-unlock-form"))
	if forms.Length() != 2 {
		t.Fatalf("want a form per holder, got %d", forms.Length())
	}
	forms.Each(func(i int, f *goquery.Selection) {
		if got := f.Find(`input[name="holder"]`).AttrOr("value", ""); got != lock.Holders[i].ID {
			t.Errorf("form %d holder %q", i, got)
		}
		if attr(t, f, "action") != ForceUnlockURL(name) {
			t.Errorf("form action %q", f.AttrOr("action", ""))
		}
		one(t, f, "force-unlock-button")
	})

	c := render(t, ForceUnlockConfirm(ForceUnlockConfirmPage{Layout: layout(NavLocks), Name: name, Holder: `u2:"x"`, Channel: "redisson_lock__channel:{" + name + "}", Count: 3}))
	page := one(t, c.Selection, "force-unlock-confirm-page")
	for id, want := range map[string]string{"confirm-name": name, "confirm-holder": `u2:"x"`, "confirm-channel": "redisson_lock__channel:{" + name + "}", "confirm-count": "3"} {
		if got := text(t, page, id); got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
	if !strings.Contains(page.Text(), `"0"`) || !strings.Contains(page.Text(), "delete") {
		t.Errorf("confirmation does not say what happens: %q", page.Text())
	}
	form := one(t, c.Selection, "force-unlock-confirm-form")
	if strings.ToLower(form.AttrOr("method", "")) != "post" || form.AttrOr("action", "") != ForceUnlockURL(name) {
		t.Errorf("confirm form %v", form.Nodes[0].Attr)
	}
	if form.Find(`input[name="holder"]`).AttrOr("value", "") != `u2:"x"` {
		t.Errorf("confirm holder")
	}
	one(t, form, "force-unlock-confirm")
}

func TestViewLimiterFormErrorsNextToFields(t *testing.T) {
	lim := limiterRows()[3]
	doc := render(t, LimiterDetail(LimiterDetailPage{Layout: layout(NavLimiters), Limiter: lim,
		Form: EditForm{Rate: "abc", IntervalMS: "2", Errors: map[string]string{FieldRate: "rate must be a whole number > 0"}}}))
	rate := one(t, doc.Selection, "field-rate")
	if got := text(t, rate, "error-rate"); got != "rate must be a whole number > 0" {
		t.Errorf("rate error %q", got)
	}
	in := one(t, rate, "input-rate")
	if attr(t, in, "value") != "abc" || attr(t, in, "aria-invalid") != "true" || attr(t, in, "aria-describedby") != "e-rate" {
		t.Errorf("rate input %v", in.Nodes[0].Attr)
	}
	interval := one(t, doc.Selection, "field-interval_ms")
	if interval.Find(tid("error-interval_ms")).Length() != 0 {
		t.Errorf("error shown on a valid field")
	}
	if attr(t, one(t, interval, "input-interval_ms"), "value") != "2" {
		t.Errorf("interval value lost")
	}
	if doc.Find(tid("form-error")).Length() != 0 {
		t.Errorf("form-level error without one")
	}
	if attr(t, one(t, doc.Selection, "limiter-form"), "action") != LimiterURL(lim.Name) {
		t.Errorf("form action")
	}

	// Without a submission the form shows the current configuration.
	fresh := render(t, LimiterDetail(LimiterDetailPage{Layout: layout(NavLimiters), Limiter: LimiterRow{Name: "x", Rate: 500, IntervalMS: 2.5}}))
	if v := attr(t, one(t, fresh.Selection, "input-rate"), "value"); v != "500" {
		t.Errorf("prefilled rate %q", v)
	}
	if v := attr(t, one(t, fresh.Selection, "input-interval_ms"), "value"); v != "2.5" {
		t.Errorf("prefilled interval %q", v)
	}
	formErr := render(t, LimiterDetail(LimiterDetailPage{Layout: layout(NavLimiters), Limiter: lim, Form: EditForm{Errors: map[string]string{"": "limiter is gone"}}}))
	if text(t, formErr.Selection, "form-error") != "limiter is gone" {
		t.Errorf("form-level error")
	}
}

func TestViewLimiterDetailState(t *testing.T) {
	lim := LimiterRow{Name: "api", Kind: "token-bucket", Rate: 500, IntervalMS: 2, PerSecond: 500, Available: 42,
		Window: Counts{Acquired: 480, Rejected: 20, Errors: 1}, Spark: []Counts{{Acquired: 10}, {Acquired: 20}}}
	rolling := []RollingRow{{At: at, Acquired: 3, Rejected: 2, Errors: 1}, {At: at.Add(-200 * time.Millisecond), Acquired: 9}}
	doc := render(t, LimiterDetail(LimiterDetailPage{Layout: layout(NavLimiters), Limiter: lim, Rolling: rolling}))
	d := one(t, doc.Selection, "limiter-detail")
	for id, want := range map[string]string{"limiter-rate": "500", "limiter-interval": "2", "limiter-per-second": "500", "limiter-available": "42", "acquired": "480", "rejected": "20", "errors": "1"} {
		if got := text(t, d, id); got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
	body := one(t, doc.Selection, "rolling-body")
	if attr(t, body, "data-rolling") != "api" || attr(t, body, "data-cap") != itoa(RollingRows) {
		t.Errorf("rolling body attrs")
	}
	rows := body.Find(tid("rolling-row"))
	if rows.Length() != 2 {
		t.Fatalf("rolling rows %d", rows.Length())
	}
	first := rows.First()
	if attr(t, first, "data-at") != itoa(at.UnixMilli()) {
		t.Errorf("data-at %q", first.AttrOr("data-at", ""))
	}
	cells := first.Find("td")
	got := []string{}
	cells.Each(func(_ int, s *goquery.Selection) { got = append(got, strings.TrimSpace(s.Text())) })
	if strings.Join(got, "|") != "05:06:07.800|3|2|1" {
		t.Errorf("newest row %q", got)
	}
}

func TestViewWall(t *testing.T) {
	rows := []LimiterRow{
		{Name: "idle"},
		{Name: "ok", Window: Counts{Acquired: 96, Rejected: 4}},
		{Name: "warn", Window: Counts{Acquired: 90, Rejected: 10}},
		{Name: "bad", Window: Counts{Acquired: 50, Rejected: 50}},
	}
	doc := render(t, Wall(WallPage{Layout: Layout{Title: "Wall"}, Limiters: rows, LockCount: 12, Events: events()}))
	if !doc.Find("body").HasClass("wall") {
		t.Errorf("wall body class")
	}
	if doc.Find(tid("nav")).Length() != 0 || doc.Find("form, button, input").Length() != 0 {
		t.Errorf("wall has controls")
	}
	if text(t, doc.Selection, "lock-count") != "12" {
		t.Errorf("lock count")
	}
	want := map[string][2]string{"idle": {"ratio-idle", "–"}, "ok": {"ratio-ok", "4.0%"}, "warn": {"ratio-warn", "10.0%"}, "bad": {"ratio-bad", "50.0%"}}
	doc.Find(tid("wall-tile")).Each(func(_ int, s *goquery.Selection) {
		name := attr(t, s, "data-limiter")
		r := one(t, s, "ratio")
		if !r.HasClass(want[name][0]) || strings.TrimSpace(r.Text()) != want[name][1] {
			t.Errorf("%s: ratio %q class %q", name, r.Text(), r.AttrOr("class", ""))
		}
		one(t, s, "sparkline")
	})
	list := one(t, doc.Selection, "event-list")
	if n := list.Find(tid("event-row")).Length(); n != wallEvents {
		t.Errorf("wall events %d, want cap %d", n, wallEvents)
	}
	one(t, doc.Selection, "frame-counter")
	one(t, doc.Selection, "ws-status")
}

func TestViewEvents(t *testing.T) {
	evs := events()
	doc := render(t, Events(EventsPage{Layout: layout(NavEvents), Events: evs}))
	list := one(t, doc.Selection, "event-list")
	if attr(t, list, "data-cap") != intStr(EventRows) {
		t.Errorf("cap")
	}
	items := list.Find(tid("event-row"))
	if items.Length() != len(evs) {
		t.Fatalf("events %d", items.Length())
	}
	items.Each(func(i int, s *goquery.Selection) {
		e := evs[i]
		if attr(t, s, "data-event-type") != e.Type || text(t, s, "event-type") != e.Type {
			t.Errorf("%d: type", i)
		}
		if text(t, s, "event-name") != e.Name {
			t.Errorf("%d: name %q", i, text(t, s, "event-name"))
		}
		if href := attr(t, one(t, s, "event-name"), "href"); href != LockURL(e.Name) {
			t.Errorf("%d: href %q", i, href)
		}
	})
	if got := text(t, items.Eq(0), "event-detail"); got != `"0" on redisson_lock__channel:{<script>alert(1)</script>}` {
		t.Errorf("unlock detail %q", got)
	}
	if got := text(t, items.Eq(1), "event-detail"); !strings.Contains(got, "h:<script>") {
		t.Errorf("force-unlock detail %q", got)
	}
	if list.Find(tid("events-empty")).Length() != 0 {
		t.Errorf("empty marker beside events")
	}
	empty := render(t, Events(EventsPage{Layout: layout(NavEvents)}))
	one(t, empty.Selection, "events-empty")
}

func TestViewOverview(t *testing.T) {
	busy := make([]LimiterRow, 15)
	for i := range busy {
		busy[i] = LimiterRow{Name: "l" + itoa(int64(i))}
	}
	doc := render(t, Overview(OverviewPage{Layout: layout(NavOverview), LockCount: 4, LimiterCount: 15, Busiest: busy, Events: events()}))
	if text(t, doc.Selection, "lock-count") != "4" || text(t, doc.Selection, "limiter-count") != "15" {
		t.Errorf("counts")
	}
	if n := one(t, doc.Selection, "busiest-table").Find(tid("limiter-row")).Length(); n != busiestShown {
		t.Errorf("busiest rows %d", n)
	}
	if n := doc.Find(tid("event-row")).Length(); n != 20 {
		t.Errorf("recent events %d", n)
	}
}

func TestViewLayoutFlashAndRedisDown(t *testing.T) {
	l := layout(NavOverview)
	l.Flash, l.FlashKind, l.RedisDown = "Lock <a/b> released", FlashOK, true
	doc := render(t, Overview(OverviewPage{Layout: l}))
	f := one(t, doc.Selection, "flash")
	if strings.TrimSpace(f.Text()) != "Lock <a/b> released" || !f.HasClass("flash-ok") {
		t.Errorf("flash %q", f.Text())
	}
	if _, hidden := one(t, doc.Selection, "redis-down").Attr("hidden"); hidden {
		t.Error("banner hidden while Redis is down")
	}
	if attr(t, one(t, doc.Selection, "redis-status"), "data-state") != "down" {
		t.Errorf("redis indicator")
	}
	if doc.Find("title").Text() != "T · lockwarden" {
		t.Errorf("title %q", doc.Find("title").Text())
	}
	quiet := render(t, Overview(OverviewPage{Layout: layout(NavOverview)}))
	// The banner is always there for the script to reveal, hidden while
	// Redis answers.
	if _, hidden := one(t, quiet.Selection, "redis-down").Attr("hidden"); !hidden || quiet.Find(tid("flash")).Length() != 0 {
		t.Errorf("flash or visible banner without cause")
	}
	b := quiet.Find("body")
	if b.AttrOr("data-frames", "") != "0" || b.AttrOr("data-ws", "") != "closed" {
		t.Errorf("body counters %v", b.Nodes[0].Attr)
	}
}

func TestViewErrorPage(t *testing.T) {
	doc := render(t, ErrorView(ErrorPage{Layout: layout(""), Status: 409, Message: "u1:7 no longer holds a/b",
		Holders: []HolderRow{{ID: "u9:1", Count: 2}}, Back: LockURL("a/b")}))
	if text(t, doc.Selection, "error-status") != "409" || text(t, doc.Selection, "error-message") != "u1:7 no longer holds a/b" {
		t.Errorf("status/message")
	}
	if got := text(t, doc.Selection, "error-holder"); got != "u9:1 ×2" {
		t.Errorf("holder %q", got)
	}
	if attr(t, one(t, doc.Selection, "error-back"), "href") != "/locks/a%2Fb" {
		t.Errorf("back link")
	}
	for _, evil := range []string{"//evil.example/", "https://evil.example/", "javascript:alert(1)", `/\evil`} {
		d := render(t, ErrorView(ErrorPage{Status: 404, Back: evil}))
		if href := attr(t, one(t, d.Selection, "error-back"), "href"); href != "/" {
			t.Errorf("back %q kept as %q", evil, href)
		}
	}
}
