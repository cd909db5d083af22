package web

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

func parseHTML(t *testing.T, body []byte) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func form(kv ...string) (*strings.Reader, map[string]string) {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return strings.NewReader(v.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
}

func TestPageEveryPageRenders(t *testing.T) {
	e := newEnv(t, nil)
	lock := e.prefix + "page lock/ключ"
	e.makeLock(lock, "w", 1, time.Minute)
	lim := e.prefix + "rl:<b>page</b>"
	e.makeBucket(lim, 10, "100")
	e.synced()
	pages := []string{
		"/", "/locks", "/locks?match=" + url.QueryEscape(e.prefix+"*"), "/locks/" + esc(lock),
		"/locks/" + esc(lock) + "/force-unlock?holder=" + url.QueryEscape(holderID("w")),
		"/limiters", "/limiters/" + esc(lim), "/events", "/wall",
	}
	for _, p := range pages {
		st, h, b := e.do("GET", p, nil, nil)
		if st != 200 {
			t.Errorf("GET %s: status %d: %.300s", p, st, b)
			continue
		}
		if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET %s: content type %q", p, ct)
		}
		if bytes.Contains(b, []byte("<b>page</b>")) {
			t.Errorf("GET %s: a name from Redis was rendered as HTML", p)
		}
		if bytes.Contains(b, []byte(" onclick=")) || bytes.Contains(b, []byte(" style=\"")) {
			t.Errorf("GET %s: inline handler or style", p)
		}
	}
	st, _, b := e.do("GET", "/locks", nil, nil)
	doc := parseHTML(t, b)
	if st != 200 || doc.Find(`[data-testid="lock-row"]`).Length() != 1 {
		t.Errorf("locks page rows: %d", doc.Find(`[data-testid="lock-row"]`).Length())
	}
	href, _ := doc.Find(`a[data-testid="lock-link"]`).Attr("href")
	if href != "/locks/"+esc(lock) {
		t.Errorf("lock link %q, want %q", href, "/locks/"+esc(lock))
	}
	// The link the page built must lead to the lock.
	if st, _, _ := e.do("GET", href, nil, nil); st != 200 {
		t.Errorf("following %s: status %d", href, st)
	}
}

func TestPageStaticHealthMetrics(t *testing.T) {
	e := newEnv(t, nil)
	for _, p := range []string{"/static/live.js", "/static/app.css"} {
		st, _, b := e.do("GET", p, nil, nil)
		if st != 200 || len(b) == 0 {
			t.Errorf("GET %s: status %d, %d bytes", p, st, len(b))
		}
	}
	for _, p := range []string{"/static/", "/static/nope.js", "/static/../server.go"} {
		if st, _, _ := e.do("GET", p, nil, nil); st != 404 {
			t.Errorf("GET %s: status %d, want 404", p, st)
		}
	}
	st, _, b := e.do("GET", "/healthz", nil, nil)
	if st != 200 || string(b) != "ok" {
		t.Errorf("healthz: %d %q", st, b)
	}
	if st, _, _ := e.do("GET", "/readyz", nil, nil); st != 200 {
		t.Errorf("readyz: %d", st)
	}
	eventually(t, 5*time.Second, "a sampler tick", func() bool { return e.srv.live.Latest() != nil })
	st, h, b := e.do("GET", "/metrics", nil, nil)
	if st != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %s", st, h.Get("Content-Type"))
	}
	for _, want := range []string{"lockwarden_ws_clients 0", "lockwarden_redis_up 1", "# TYPE lockwarden_sampler_ticks_total counter"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("metrics lack %q:\n%s", want, b)
		}
	}
}

func TestServerReadyzRedisDown(t *testing.T) {
	// A server whose Redis is a port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	down := New(Config{Inspector: inspect.New(rdb, nil), Listen: "127.0.0.1:0"})
	if err := down.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	start := time.Now()
	resp, err := http.Get(down.URL() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("readyz with Redis down: %d, want 503", resp.StatusCode)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("readyz took %v", d)
	}
	resp, err = http.Get(down.URL() + "/healthz")
	if err == nil {
		resp.Body.Close()
	}
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("healthz must not depend on Redis: %v", err)
	}
	// The overview says Redis is down instead of failing silently.
	eventually(t, 10*time.Second, "the sampler to notice", func() bool {
		sn := down.live.Latest()
		return sn != nil && !sn.RedisUp
	})
	resp, err = http.Get(down.URL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Errorf("overview with Redis down: %d, want 503", resp.StatusCode)
	}
}

func TestServerHandlerWithoutOpen(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	srv := New(Config{Inspector: inspect.New(rdb, nil), Match: prefix + "*"})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	name := prefix + "l"
	rdb.HSet(context.Background(), name, holderID("w"), 1)
	rdb.PExpire(context.Background(), name, time.Minute)
	// Events go nowhere without a running hub, and must not block.
	for range 100 {
		req, _ := http.NewRequest("POST", ts.URL+"/api/locks/"+esc(name)+"/force-unlock",
			strings.NewReader(`{"holder":"`+holderID("w")+`","reason":"test"}`))
		req.Header.Set("Authorization", "Bearer x")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("force-unlock without Open: %d", resp.StatusCode)
		}
		rdb.HSet(context.Background(), name, holderID("w"), 1)
		rdb.PExpire(context.Background(), name, time.Minute)
	}
	if err := srv.Close(); err != nil {
		t.Error(err)
	}
}

func TestPageLimiterForm(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "rl/form"
	e.makeBucket(name, 100, "10")
	page := "/limiters/" + esc(name)

	st, _, b := e.do("GET", page, nil, nil)
	if st != 200 {
		t.Fatalf("GET %s: %d", page, st)
	}

	// From another site: 403 and nothing changed.
	body, hdr := form("rate", "200", "interval_ms", "5")
	hdr["Sec-Fetch-Site"] = "cross-site"
	if st, _, _ := e.do("POST", page, body, hdr); st != 403 {
		t.Errorf("cross-site POST: %d, want 403", st)
	}
	if h := e.hgetall(name); h["max_permits"] != "100" || h["interval"] != "10" {
		t.Fatalf("rejected POSTs changed the bucket: %v", h)
	}

	// Bad input: 400, the page again with the message under the field.
	body, hdr = form("rate", "0", "interval_ms", "5", "reason", "r")
	st, _, b = e.do("POST", page, body, hdr)
	if st != 400 {
		t.Fatalf("POST rate=0: %d, want 400", st)
	}
	doc := parseHTML(t, b)
	if doc.Find(`[data-testid="limiter-form"]`).Length() != 1 {
		t.Error("400 did not re-render the form")
	}
	if !strings.Contains(doc.Find("form").Text(), "rate must be at least 1") {
		t.Errorf("no field message in the form: %q", doc.Find("form").Text())
	}
	for _, bad := range [][]string{{"abc", "5"}, {"10", "NaN"}, {"10", "-1"}, {"10", "Inf"}, {"", "5"}, {"1000000000000", "5"}, {"10", "0.00001"}} {
		body, hdr = form("rate", bad[0], "interval_ms", bad[1], "reason", "r", "confirm", "yes")
		if st, _, _ := e.do("POST", page, body, hdr); st != 400 {
			t.Errorf("POST rate=%q interval_ms=%q: %d, want 400", bad[0], bad[1], st)
		}
	}
	// Without a reason: 400, saying so under the reason, with the
	// message about a bad rate too.
	body, hdr = form("rate", "1000000000000", "interval_ms", "5", "confirm", "yes")
	st, _, b = e.do("POST", page, body, hdr)
	doc = parseHTML(t, b)
	if st != 400 || !strings.Contains(doc.Find(`[data-testid="error-reason"]`).Text(), "reason is required") ||
		!strings.Contains(doc.Find(`[data-testid="error-rate"]`).Text(), "from 1 to 1,000,000") {
		t.Errorf("POST without a reason: %d; reason says %q, rate says %q", st, doc.Find(`[data-testid="error-reason"]`).Text(),
			doc.Find(`[data-testid="error-rate"]`).Text())
	}
	if h := e.hgetall(name); h["max_permits"] != "100" || h["interval"] != "10" {
		t.Fatalf("bad input changed the bucket: %v", h)
	}

	// The form's first step: the confirmation, with the rule in words and
	// the what-if, and nothing changed or audited.
	audited := len(e.changeRecords(bearer))
	body, hdr = form("rate", "200", "interval_ms", "5", "reason", "launch day")
	st, _, b = e.do("POST", page, body, hdr)
	doc = parseHTML(t, b)
	cf := doc.Find(`[data-testid="limiter-confirm-page"]`)
	if st != 200 || cf.Length() != 1 || cf.Find(`[data-testid="whatif-result"]`).Length() != 1 ||
		cf.Find(`[data-testid="limiter-confirm-to"]`).Text() != "capacity 200, refill one every 5 ms (200 per second)" ||
		cf.Find(`[data-testid="limiter-confirm-from"]`).Text() != "capacity 100, refill one every 10 ms (100 per second)" ||
		cf.Find(`[data-testid="limiter-confirm-reason"]`).Text() != "launch day" {
		t.Fatalf("first step: %d, confirmation %q", st, cf.Text())
	}
	if h := e.hgetall(name); h["max_permits"] != "100" || len(e.changeRecords(bearer)) != audited {
		t.Fatalf("the confirmation step changed the bucket (%v) or the audit trail", h)
	}

	// Confirmed: 303 back to the page, the bucket changed, the reason kept.
	body, hdr = form("rate", "200", "interval_ms", "5", "reason", "launch day", "confirm", "yes")
	st, h, _ := e.do("POST", page, body, hdr)
	if st != http.StatusSeeOther {
		t.Fatalf("POST: %d, want 303", st)
	}
	if loc := h.Get("Location"); !strings.HasPrefix(loc, page+"?") {
		t.Errorf("redirect to %q, want %s?...", loc, page)
	}
	if h := e.hgetall(name); h["max_permits"] != "200" || h["interval"] != "5" {
		t.Errorf("bucket after the form: %v", h)
	}
	if recs := e.changeRecords(bearer); len(recs) == 0 || recs[0].Action != "modify" || recs[0].Reason != "launch day" {
		t.Errorf("audit after the edit: %+v; want the modify with its reason", recs)
	}
	st, _, b = e.do("GET", h.Get("Location"), nil, nil)
	if st != 200 || !bytes.Contains(b, []byte("was updated")) {
		t.Errorf("page after redirect: %d, flash missing", st)
	}
}

func TestPageForceUnlockFlow(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	name := e.prefix + "stuck {lock}"
	e.makeLock(name, "w1", 3, time.Minute)
	confirm := "/locks/" + esc(name) + "/force-unlock?holder=" + url.QueryEscape(holderID("w1"))

	st, _, b := e.do("GET", confirm, nil, nil)
	if st != 200 {
		t.Fatalf("confirm page: %d", st)
	}
	doc := parseHTML(t, b)
	if ch := doc.Find(`[data-testid="confirm-channel"]`).Text(); ch != "redisson_lock__channel:"+name {
		t.Errorf("confirm page channel %q", ch)
	}
	action, _ := doc.Find(`form[method="post"]`).Attr("action")
	if action != "/locks/"+esc(name)+"/force-unlock" {
		t.Fatalf("form action %q", action)
	}

	// Someone else took the lock meanwhile: 409 naming them.
	e.rdb.Del(ctx, name)
	e.makeLock(name, "w2", 1, time.Minute)
	body, hdr := form("holder", holderID("w1"), "reason", "stuck")
	st, _, b = e.do("POST", action, body, hdr)
	if st != 409 {
		t.Fatalf("POST for a replaced holder: %d, want 409", st)
	}
	if !bytes.Contains(b, []byte(holderID("w2"))) {
		t.Error("409 page does not name the current holder")
	}
	if n, _ := e.rdb.Exists(ctx, name).Result(); n != 1 {
		t.Fatal("409 deleted the lock")
	}
	// The confirmation page says the same before anyone clicks.
	if st, _, _ := e.do("GET", confirm, nil, nil); st != 409 {
		t.Errorf("confirm page for a replaced holder: %d, want 409", st)
	}

	// No reason: the confirmation again, the message under the field, the
	// lock untouched.
	body, hdr = form("holder", holderID("w2"))
	st, _, b = e.do("POST", action, body, hdr)
	if st != 400 || parseHTML(t, b).Find(`[data-testid="error-reason"]`).Length() != 1 {
		t.Fatalf("POST without a reason: %d, want 400 with the reason message", st)
	}
	if n, _ := e.rdb.Exists(ctx, name).Result(); n != 1 {
		t.Fatal("a force-unlock without a reason deleted the lock")
	}

	body, hdr = form("holder", holderID("w2"), "reason", "w2 crashed")
	st, h, _ := e.do("POST", action, body, hdr)
	if st != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/locks?") {
		t.Fatalf("POST for the holder: %d to %q, want 303 to /locks?...", st, h.Get("Location"))
	}
	if n, _ := e.rdb.Exists(ctx, name).Result(); n != 0 {
		t.Error("lock survived the force-unlock")
	}
	st, _, b = e.do("GET", h.Get("Location"), nil, nil)
	if st != 200 || !bytes.Contains(b, []byte("force-unlocked")) {
		t.Errorf("locks page after redirect: %d, no flash", st)
	}

	body, hdr = form("holder", holderID("w2"), "reason", "again")
	st, _, b = e.do("POST", action, body, hdr)
	if st != 404 || !bytes.Contains(b, []byte(`data-testid="error-page"`)) {
		t.Errorf("POST for a gone lock: %d, want the 404 page", st)
	}
	// JSON for clients that ask for it, outside /api too.
	st, hj, _ := e.do("GET", "/locks/"+esc(name), nil, map[string]string{"Accept": "application/json"})
	if st != 404 || !strings.HasPrefix(hj.Get("Content-Type"), "application/json") {
		t.Errorf("404 with Accept JSON: %d %s", st, hj.Get("Content-Type"))
	}
}
