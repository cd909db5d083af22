package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/admin"
)

type auditList struct {
	Records []inspect.AuditRecord `json:"records"`
}

func (e *testEnv) auditRecords(hdr map[string]string) []inspect.AuditRecord {
	e.t.Helper()
	var out auditList
	st, _, b := e.do("GET", "/api/audit", nil, hdr)
	if st != 200 {
		e.t.Fatalf("GET /api/audit: %d %s", st, b)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatal(err)
	}
	return out.Records
}

// changeRecords are the change trail's records without the intents each
// change writes before it is made: one record per change, newest first.
func (e *testEnv) changeRecords(hdr map[string]string) []inspect.AuditRecord {
	e.t.Helper()
	var out []inspect.AuditRecord
	for _, r := range e.auditRecords(hdr) {
		if r.Outcome != inspect.OutcomeIntent {
			out = append(out, r)
		}
	}
	return out
}

// Force-unlock from the confirmation form is recorded with actor, remote
// address, target, state before and after, outcome and the reason.
func TestAuditForceUnlockRecorded(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "stuck"
	e.makeLock(name, "w1", 3, time.Minute)
	_, _, b := e.do("GET", "/locks/"+esc(name)+"/force-unlock?holder="+url.QueryEscape(holderID("w1")), nil, nil)
	body, hdr := form("holder", holderID("w1"), "reason", "w1 is wedged, INC-42")
	if st, _, b := e.do("POST", "/locks/"+esc(name)+"/force-unlock", body, hdr); st != 303 {
		t.Fatalf("force-unlock: %d %s", st, b)
	}
	// The intent, written before the lock was touched, then the outcome.
	recs := e.auditRecords(nil)
	if len(recs) != 2 || recs[1].Outcome != inspect.OutcomeIntent || recs[0].Intent != recs[1].ID {
		t.Fatalf("%d records, want the outcome and its intent: %+v", len(recs), recs)
	}
	r := recs[0]
	if r.Action != "force-unlock" || r.Target != name || r.Outcome != inspect.OutcomeOK || r.Reason != "w1 is wedged, INC-42" ||
		r.Role != "admin" || r.Fingerprint != "local" || r.Remote != "127.0.0.1" || r.RequestID == "" {
		t.Errorf("record = %+v", r)
	}
	if !strings.Contains(r.Before, holderID("w1")+" ×3") || !strings.Contains(r.After, "released") {
		t.Errorf("before %q / after %q", r.Before, r.After)
	}
	if time.Since(r.Time) > time.Minute || time.Until(r.Time) > time.Minute {
		t.Errorf("record time %v not now", r.Time)
	}
	// The Audit page shows it.
	st, _, b := e.do("GET", "/audit", nil, nil)
	doc := parseHTML(t, b)
	if st != 200 || doc.Find(`[data-testid="audit-row"]`).Length() != 2 ||
		doc.Find(`[data-testid="audit-reason"]`).First().Text() != "w1 is wedged, INC-42" {
		t.Errorf("audit page: %d, rows %d", st, doc.Find(`[data-testid="audit-row"]`).Length())
	}
}

// Modify with a token records the token's fingerprint, never the token;
// a viewer's attempt, a conflict and a failed sign-in are recorded too.
func TestAuditActorsAndOutcomes(t *testing.T) {
	e := newEnv(t, withTokens)
	rl := e.prefix + "rl"
	e.makeBucket(rl, 100, "10")
	lock := e.prefix + "lock"
	e.makeLock(lock, "w1", 1, time.Minute)

	e.sendJSONAuth("PUT", "/api/limiters/"+esc(rl), `{"rate":20,"interval_ms":5,"reason":"test"}`, adminTok, 200)
	e.sendJSONAuth("PUT", "/api/limiters/"+esc(rl), `{"rate":1,"interval_ms":1,"reason":"test"}`, viewerTok, 403)
	e.sendJSONAuth("POST", "/api/locks/"+esc(lock)+"/force-unlock", `{"holder":"`+holderID("w9")+`","reason":"r"}`, adminTok, 409)
	e.sendJSONAuth("PUT", "/api/limiters/"+esc(rl), `{"rate":0,"interval_ms":1,"reason":"test"}`, adminTok, 400)
	e.sendJSONAuth("GET", "/api/locks", "", "guessed-token", 401)
	e.signIn("guessed-again", "/", nil)

	// The change trail holds what admins did, each change's intent
	// before its outcome; refusals are in the refused trail.
	recs := e.auditRecords(bearerOf(viewerTok))
	fp := func(tok string) string {
		f, err := e.srv.auth.Fingerprint(context.Background(), tok)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	type want struct{ action, outcome, role, fp string }
	check := func(trail string, recs []inspect.AuditRecord, wants []want) {
		t.Helper()
		if len(recs) != len(wants) {
			t.Fatalf("%s: %d records, want %d: %+v", trail, len(recs), len(wants), recs)
		}
		for i, w := range wants {
			r := recs[i]
			if r.Action != w.action || r.Outcome != w.outcome || r.Role != w.role || r.Fingerprint != w.fp {
				t.Errorf("%s record %d = %+v, want %+v", trail, i, r, w)
			}
		}
	}
	check("changes", recs, []want{
		{"modify", inspect.OutcomeInvalid, "admin", fp(adminTok)},
		{"force-unlock", inspect.OutcomeConflict, "admin", fp(adminTok)},
		{"force-unlock", inspect.OutcomeIntent, "admin", fp(adminTok)},
		{"modify", inspect.OutcomeOK, "admin", fp(adminTok)},
		{"modify", inspect.OutcomeIntent, "admin", fp(adminTok)},
	})
	if ok := recs[3]; ok.Target != rl || ok.Before != "rate=100 interval_ms=10" || ok.After != "rate=20 interval_ms=5" || ok.Intent != recs[4].ID {
		t.Errorf("modify record before/after/intent: %+v", ok)
	}
	if c := recs[1]; !strings.Contains(c.After, holderID("w1")) {
		t.Errorf("conflict record does not name the current holder: %+v", c)
	}
	var refused auditList
	_, _, b := e.do("GET", "/api/audit?trail=refused", nil, bearerOf(viewerTok))
	if err := json.Unmarshal(b, &refused); err != nil {
		t.Fatal(err)
	}
	check("refused", refused.Records, []want{
		{"sign-in", inspect.OutcomeDenied, "", ""},
		{"sign-in", inspect.OutcomeDenied, "", ""},
		{"modify", inspect.OutcomeDenied, "viewer", fp(viewerTok)},
	})
	sum := sha256.Sum256([]byte(adminTok))
	if fp(adminTok) == hex.EncodeToString(sum[:8]) {
		t.Error("the admin's fingerprint is the token's bare hash")
	}
	raw, _ := e.rdb.XRange(context.Background(), e.srv.admin.AuditKey(), "-", "+").Result()
	raw2, _ := e.rdb.XRange(context.Background(), e.srv.cfg.refusedAuditKey(), "-", "+").Result()
	for _, m := range append(raw, raw2...) {
		for _, v := range m.Values {
			s, _ := v.(string)
			for _, tok := range []string{adminTok, viewerTok, "guessed-token", "guessed-again"} {
				if strings.Contains(s, tok) {
					t.Fatalf("the audit trail holds a token: %v", m.Values)
				}
			}
		}
	}
	// Bounded reads.
	for _, bad := range []string{"0", "-1", "501", "x"} {
		if st, _, _ := e.do("GET", "/api/audit?limit="+bad, nil, bearerOf(viewerTok)); st != 400 {
			t.Errorf("limit=%s: %d, want 400", bad, st)
		}
	}
	var two auditList
	_, _, b = e.do("GET", "/api/audit?limit=2", nil, bearerOf(viewerTok))
	if json.Unmarshal(b, &two) != nil || len(two.Records) != 2 {
		t.Errorf("limit=2 gave %s", b)
	}
}

// A flood of bad tokens is refused, written to the refused trail up to
// the per-source burst and counted past it; the change trail gets none.
func TestAuditFailedSignInFloodThrottled(t *testing.T) {
	e := newEnv(t, withTokens)
	// Signed in before the flood: the guessing limits do not touch it.
	if st, _, _ := e.signIn(viewerTok, "/", nil); st != 303 {
		t.Fatal("viewer sign-in")
	}
	for range 200 {
		e.do("GET", "/api/locks", nil, bearerOf("bad-token-0123456789"))
	}
	ctx := context.Background()
	for _, r := range e.auditRecords(nil) {
		if r.Outcome != inspect.OutcomeOK {
			t.Errorf("a refusal in the change trail: %+v", r)
		}
	}
	if n := e.rdb.XLen(ctx, e.srv.cfg.refusedAuditKey()).Val(); n < 5 || n > 20 {
		t.Errorf("%d refused records for 200 attempts from one address, want its burst and a few more", n)
	}
	e.srv.admin.WriteSummaries(ctx, e.srv.authFailures)
	var refused auditList
	_, _, b := e.do("GET", "/api/audit?trail=refused&limit=5", nil, nil)
	if err := json.Unmarshal(b, &refused); err != nil {
		t.Fatal(err)
	}
	var summarised bool
	for _, r := range refused.Records {
		summarised = summarised || r.Action == "auth-failures" || r.Action == "refused-requests"
	}
	if !summarised {
		t.Errorf("no summary of the flood in the refused trail: %s", b)
	}
	_, _, b = e.do("GET", "/metrics", nil, nil)
	if !bytes.Contains(b, []byte("lockwarden_audit_suppressed_total ")) || bytes.Contains(b, []byte("lockwarden_audit_suppressed_total 0\n")) {
		t.Error("suppressed records are not counted in /metrics")
	}
}

func (e *testEnv) sendJSONAuth(method, path, body, tok string, want int) {
	e.t.Helper()
	st, _, b := e.do(method, path, strings.NewReader(body), bearerOf(tok))
	if st != want {
		e.t.Fatalf("%s %s as %.6s: %d, want %d (%s)", method, path, tok, st, want, b)
	}
}

// The trail is paged: with more records than one page holds (500 at
// most), an admin's change stays reachable through next_before in the
// API and the "older" links of the page.
func TestAuditPagedChangeReachable(t *testing.T) {
	e := newEnv(t, nil)
	ctx := t.Context()
	rl := e.prefix + "rl"
	e.makeBucket(rl, 100, "10")
	e.sendJSON("PUT", "/api/limiters/"+esc(rl), `{"rate":7,"interval_ms":10,"reason":"test"}`, 200, nil)
	const newer = 600
	for i := range newer {
		if _, err := e.srv.admin.Trail().Append(ctx, inspect.AuditRecord{Role: "admin", Action: "reset",
			Target: e.prefix + "other-" + strconv.Itoa(i), Outcome: inspect.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
	}
	isChange := func(r inspect.AuditRecord) bool {
		return r.Target == rl && r.Action == admin.ActionModify && r.Outcome == inspect.OutcomeOK
	}

	var page struct {
		Records    []inspect.AuditRecord `json:"records"`
		NextBefore string                `json:"next_before"`
	}
	path, pages, found := "/api/audit?limit=500", 0, false
	for !found {
		if pages++; pages > 3 {
			t.Fatalf("the change is not in the first %d pages", pages-1)
		}
		e.getJSON(path, 200, &page)
		if pages == 1 && len(page.Records) != 500 {
			t.Fatalf("the first page has %d records, want 500", len(page.Records))
		}
		for _, r := range page.Records {
			found = found || isChange(r)
		}
		if !found && page.NextBefore == "" {
			t.Fatalf("page %d (%d records) has no next_before and no change", pages, len(page.Records))
		}
		path = "/api/audit?limit=500&before=" + url.QueryEscape(page.NextBefore)
	}
	if pages != 2 {
		t.Errorf("the change was on page %d, want 2 (%d newer records)", pages, newer)
	}

	// The page: "Older records" until the change's row.
	path, found = "/audit?limit=500", false
	for range 3 {
		st, _, b := e.do("GET", path, nil, nil)
		if st != 200 {
			t.Fatalf("GET %s: %d", path, st)
		}
		doc := parseHTML(t, b)
		doc.Find(`[data-testid="audit-row"]`).Each(func(_ int, s *goquery.Selection) {
			found = found || (strings.TrimSpace(s.Find(`[data-testid="audit-target"]`).Text()) == rl && s.AttrOr("data-action", "") == admin.ActionModify)
		})
		if found {
			if doc.Find(`[data-testid="audit-newest"]`).Length() != 1 {
				t.Error("an older page has no link back to the newest")
			}
			break
		}
		path = doc.Find(`[data-testid="audit-older"]`).AttrOr("href", "")
		if path == "" {
			t.Fatal("the audit page has no link to older records and no change")
		}
	}
	if !found {
		t.Fatal("the change is not reachable through the audit page's older links")
	}

	// A cursor that is no record id is refused, naming the field.
	for _, p := range []string{"/api/audit?before=yesterday", "/audit?before=1-x"} {
		if st, _, b := e.do("GET", p, nil, nil); st != 400 || !strings.Contains(string(b), "before") {
			t.Errorf("GET %s: %d %s, want 400 naming before", p, st, b)
		}
	}
}
