package web

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
)

// familyEnv is a console that groups the test's per-IP counters (limit 3
// per minute) into one family.
func familyEnv(t *testing.T) *testEnv {
	t.Helper()
	return patternsEnv(t, func(p string) inspect.ObjectPatterns {
		return inspect.ObjectPatterns{GroupCounters: true,
			Counters: []inspect.CounterRule{{Pattern: p + "ip:*", Limit: 3, Window: time.Minute}}}
	})
}

// Many IPs are one row of /api/families and none of /api/limiters; the
// family's page names the top offender, and its reset form deletes that
// one key, audited, and nothing else.
func TestAPIFamiliesRowsTopAndReset(t *testing.T) {
	e := familyEnv(t)
	ctx := context.Background()
	pattern := e.prefix + "ip:*"
	pipe := e.rdb.Pipeline()
	for i := range 300 {
		pipe.Set(ctx, e.prefix+"ip:10.0.0."+strconv.Itoa(i), 1+i%3, time.Minute)
	}
	hot := e.prefix + "ip:192.0.2.7"
	pipe.Set(ctx, hot, 20, time.Minute)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := range 300 {
			e.rdb.Del(context.Background(), e.prefix+"ip:10.0.0."+strconv.Itoa(i))
		}
		e.rdb.Del(context.Background(), hot)
	})

	var fam familyJSON
	eventually(t, 15*time.Second, "the family with its top offender", func() bool {
		var list struct{ Families []familyJSON }
		e.getJSON("/api/families", 200, &list)
		if len(list.Families) != 1 {
			return false
		}
		fam = list.Families[0]
		return fam.Keys == 301 && len(fam.Hour.MostRejected) > 0
	})
	if fam.ID != pattern || fam.Kind != "counters" || fam.Limit != 3 || fam.Hour.MostRejected[0].Key != hot ||
		fam.Hour.MostRejected[0].Rejected != 17 || fam.Hour.NearestLimit[0].Key != hot {
		t.Fatalf("family = %+v, hour %+v", fam, fam.Hour)
	}
	var lims struct{ Total int }
	e.getJSON("/api/limiters", 200, &lims)
	if lims.Total != 0 {
		t.Errorf("the limiters list has %d rows; the counters belong to their family", lims.Total)
	}

	// One family by its pattern, one span; bad parameters name themselves.
	var one familyJSON
	e.getJSON("/api/families/"+esc(pattern)+"?span=minute", 200, &one)
	if one.ID != pattern || one.Minute == nil || one.Hour != nil {
		t.Errorf("span=minute = %+v", one)
	}
	for path, field := range map[string]string{
		"/api/families?span=day":                                           "span",
		"/api/families/" + esc(pattern) + "?span=2h":                       "span",
		"/api/families?match=" + strings.Repeat("x", inspect.MaxGlobLen+1): "match",
	} {
		var errBody struct{ Field string }
		e.getJSON(path, 400, &errBody)
		if errBody.Field != field {
			t.Errorf("%s: field %q, want %q", path, errBody.Field, field)
		}
	}
	e.getJSON("/api/families/"+esc(e.prefix+"nope:*"), 404, nil)
	e.getJSON("/api/families/"+esc("elsewhere:*"), 404, nil) // outside --match

	// The page lists the offender with a reset button.
	st, _, b := e.do("GET", views.FamilyURL(pattern), nil, nil)
	doc := parseHTML(t, b)
	top := doc.Find(`[data-testid="family-span-hour"] [data-testid="most-rejected"] [data-testid="offender"]`).First()
	if st != 200 || top.AttrOr("data-key", "") != hot || top.Find(`[data-testid="offender-reset-form"]`).Length() != 1 {
		t.Fatalf("family page %d: %s", st, doc.Find(`[data-testid="family-detail"]`).Text())
	}
	st, _, b = e.do("GET", "/limiters", nil, nil)
	if st != 200 || parseHTML(t, b).Find(`[data-testid="families-link"]`).AttrOr("href", "") != views.FamiliesURL {
		t.Error("the limiters page does not link the families")
	}

	// A key outside the family, a missing key or a cross-origin post
	// change nothing.
	other := e.prefix + "other:1"
	e.rdb.Set(ctx, other, 5, time.Minute)
	t.Cleanup(func() { e.rdb.Del(context.Background(), other) })
	for _, key := range []string{other, ""} {
		body, hdr := form(views.FieldKey, key)
		if st, _, _ := e.do("POST", views.FamilyResetURL(pattern), body, hdr); st != 400 {
			t.Errorf("reset of %q: %d, want 400", key, st)
		}
	}
	body, hdr := form(views.FieldKey, hot)
	hdr["Origin"] = "https://evil.example"
	if st, _, _ := e.do("POST", views.FamilyResetURL(pattern), body, hdr); st != 403 || e.rdb.Exists(ctx, hot).Val() != 1 || e.rdb.Exists(ctx, other).Val() != 1 {
		t.Fatalf("cross-origin reset: %d", st)
	}

	body, hdr = form(views.FieldKey, hot)
	st, h, _ := e.do("POST", views.FamilyResetURL(pattern), body, hdr)
	if st != 303 || !strings.HasPrefix(h.Get("Location"), views.FamilyURL(pattern)+"?flash=reset") || e.rdb.Exists(ctx, hot).Val() != 0 {
		t.Fatalf("reset form: %d %v", st, h)
	}
	if e.rdb.Exists(ctx, e.prefix+"ip:10.0.0.1").Val() != 1 {
		t.Error("the reset deleted another member")
	}
	e.sendJSON("POST", "/api/families/"+esc(pattern)+"/reset", `{"key":"`+hot+`"}`, 404, nil)
	var reset *inspect.AuditRecord
	for _, r := range e.changeRecords(bearer) {
		if r.Action == "reset" && r.Outcome == inspect.OutcomeOK && r.Target == hot {
			reset = &r
		}
	}
	if reset == nil || !strings.HasPrefix(reset.Before, "count=20 ") {
		t.Errorf("audit of the reset: %+v", reset)
	}
}

// A per-client Redisson limiter's clients are a family named after the
// limiter; its members are windows, not counters, so a reset is refused.
func TestAPIFamilyPerClientLimiter(t *testing.T) {
	e := familyEnv(t)
	ctx := context.Background()
	name := e.prefix + "partner"
	e.rdb.HSet(ctx, name, "rate", 10, "interval", 60000, "type", 1)
	value := func(id string) string { return "{" + name + "}:value:" + id }
	e.rdb.Set(ctx, value("client-a"), 1, time.Minute) // 9 of 10 taken
	e.rdb.Set(ctx, value("client-b"), 7, time.Minute)
	t.Cleanup(func() { e.rdb.Del(context.Background(), name, value("client-a"), value("client-b")) })

	var fam familyJSON
	eventually(t, 15*time.Second, "the per-client family", func() bool {
		st, _, b := e.do("GET", "/api/families/"+esc(name), nil, nil)
		return st == 200 && json.Unmarshal(b, &fam) == nil && fam.Keys == 2
	})
	if fam.Kind != inspect.FamilyPerClient || fam.Limit != 10 || len(fam.Minute.NearestLimit) != 2 ||
		fam.Minute.NearestLimit[0].ID != "client-a" || fam.Minute.NearestLimit[0].Fill != 0.9 {
		t.Fatalf("family = %+v, minute %+v", fam, fam.Minute)
	}
	st, _, b := e.do("GET", "/limiters/"+esc(name), nil, nil)
	if st != 200 || parseHTML(t, b).Find(`[data-testid="limiter-family-link"]`).AttrOr("href", "") != views.FamilyURL(name) {
		t.Error("the limiter's page does not link its family")
	}
	var errBody struct{ Field string }
	e.sendJSON("POST", "/api/families/"+esc(name)+"/reset", `{"key":"`+value("client-a")+`"}`, 400, &errBody)
	if errBody.Field != "key" || e.rdb.Exists(ctx, value("client-a")).Val() != 1 {
		t.Errorf("reset of a client's window: field %q", errBody.Field)
	}
}
