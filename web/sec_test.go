package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/auth"
)

const (
	adminTok  = "admin-token-0123456789abcdef"
	viewerTok = "viewer-token-0123456789abcdef"
)

func withTokens(c *Config) { c.AdminToken, c.ViewerToken = adminTok, viewerTok }

func bearerOf(tok string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
}

// A viewer reads everything and changes nothing; an admin changes; no
// token or a wrong one is 401; an anonymous browser is sent to sign in.
func TestSecRolesViewerCannotMutate(t *testing.T) {
	e := newEnv(t, withTokens)
	ctx := context.Background()
	rl := e.prefix + "rl"
	e.makeBucket(rl, 100, "10")
	lock := e.prefix + "lock"
	e.makeLock(lock, "w1", 1, time.Minute)

	for _, p := range []string{"/api/limiters/" + esc(rl), "/api/locks", "/api/stats", "/api/audit", "/metrics"} {
		if st, _, b := e.do("GET", p, nil, bearerOf(viewerTok)); st != 200 {
			t.Errorf("viewer GET %s: %d %s", p, st, b)
		}
		if st, _, _ := e.do("GET", p, nil, nil); st != 401 {
			t.Errorf("anonymous GET %s: %d, want 401", p, st)
		}
	}
	st, h, _ := e.do("GET", "/locks", nil, nil)
	if st != http.StatusSeeOther || h.Get("Location") != "/login?next=%2Flocks" {
		t.Errorf("anonymous page: %d to %q, want 303 to the sign-in page", st, h.Get("Location"))
	}

	mutations := []struct{ method, path, body string }{
		{"PUT", "/api/limiters/" + esc(rl), `{"rate":5,"interval_ms":1,"reason":"test"}`},
		{"POST", "/api/locks/" + esc(lock) + "/force-unlock", `{"holder":"` + holderID("w1") + `","reason":"x"}`},
	}
	for _, m := range mutations {
		for _, tc := range []struct {
			hdr  map[string]string
			want int
		}{{bearerOf(viewerTok), 403}, {bearerOf("wrong"), 401}, {bearerOf(""), 401}, {map[string]string{"Content-Type": "application/json"}, 401}} {
			st, _, b := e.do(m.method, m.path, strings.NewReader(m.body), tc.hdr)
			if st != tc.want {
				t.Errorf("%s %s with %q: %d, want %d (%s)", m.method, m.path, tc.hdr["Authorization"], st, tc.want, b)
			}
		}
	}
	if h := e.hgetall(rl); h["max_permits"] != "100" || h["interval"] != "10" {
		t.Fatalf("refused requests changed the limiter: %v", h)
	}
	if n, _ := e.rdb.Exists(ctx, lock).Result(); n != 1 {
		t.Fatal("refused requests broke the lock")
	}
	if st, _, b := e.do("PUT", "/api/limiters/"+esc(rl), strings.NewReader(`{"rate":5,"interval_ms":1,"reason":"test"}`), bearerOf(adminTok)); st != 200 {
		t.Fatalf("admin PUT: %d %s", st, b)
	}
	if h := e.hgetall(rl); h["max_permits"] != "5" {
		t.Errorf("admin PUT did not change the limiter: %v", h)
	}
}

// signIn posts token on the sign-in page and returns the response.
func (e *testEnv) signIn(token, next string, hdr map[string]string) (int, http.Header, []byte) {
	e.t.Helper()
	if st, _, _ := e.do("GET", "/login", nil, nil); st != 200 {
		e.t.Fatalf("GET /login: %d", st)
	}
	body, h := form("token", token, "next", next)
	for k, v := range hdr {
		h[k] = v
	}
	return e.do("POST", "/login", body, h)
}

func sessionCookieOf(h http.Header) *http.Cookie {
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == auth.SessionCookie {
			return c
		}
	}
	return nil
}

// Browsers sign in on a page and get a cookie that is HttpOnly,
// SameSite=Strict, expiring, and Secure under TLS.
func TestSecLoginSessionCookie(t *testing.T) {
	e := newEnv(t, withTokens)
	rl := e.prefix + "rl"
	e.makeBucket(rl, 100, "10")

	st, _, b := e.signIn("not-a-token", "/", nil)
	if st != 401 || parseHTML(t, b).Find(`[data-testid="login-error"]`).Length() != 1 {
		t.Fatalf("wrong token: %d, want 401 with a message", st)
	}
	// A redirect target on another site is ignored.
	st, h, _ := e.signIn(viewerTok, "//evil.example/x", map[string]string{"X-Forwarded-Proto": "https"})
	if st != http.StatusSeeOther || h.Get("Location") != "/" {
		t.Fatalf("sign-in: %d to %q, want 303 to /", st, h.Get("Location"))
	}
	ck := sessionCookieOf(h)
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.MaxAge <= 0 || !ck.Secure {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Max-Age, Secure behind https", ck)
	}
	// The jar did not keep the Secure cookie over http; sign in plainly.
	st, h, _ = e.signIn(viewerTok, "/limiters", nil)
	if ck := sessionCookieOf(h); st != 303 || ck == nil || ck.Secure || h.Get("Location") != "/limiters" {
		t.Fatalf("plain sign-in: %d %+v", st, ck)
	}
	page := "/limiters/" + esc(rl)
	st, _, b = e.do("GET", page, nil, nil)
	if st != 200 {
		t.Fatalf("viewer session GET %s: %d", page, st)
	}
	doc := parseHTML(t, b)
	if doc.Find(`[data-testid="limiter-form"]`).Length() != 0 || doc.Find(`[data-testid="whoami-role"]`).Text() != "viewer" {
		t.Error("a viewer's page offers the edit form or does not say viewer")
	}
	// A viewer's same-origin form POST is refused.
	body, hdr := form("rate", "5", "interval_ms", "1")
	hdr["Sec-Fetch-Site"] = "same-origin"
	if st, _, _ := e.do("POST", page, body, hdr); st != 403 {
		t.Errorf("viewer form POST: %d, want 403", st)
	}
	if h := e.hgetall(rl); h["max_permits"] != "100" {
		t.Fatalf("viewer changed the limiter: %v", h)
	}

	// Admin session: the same form works.
	if st, _, _ := e.signIn(adminTok, "/", nil); st != 303 {
		t.Fatal("admin sign-in failed")
	}
	_, _, b = e.do("GET", page, nil, nil)
	body, hdr = form("rate", "5", "interval_ms", "1", "reason", "test", "confirm", "yes")
	if st, _, b := e.do("POST", page, body, hdr); st != 303 {
		t.Fatalf("admin form POST: %d %s", st, b)
	}
	if h := e.hgetall(rl); h["max_permits"] != "5" {
		t.Errorf("admin form did not change the limiter: %v", h)
	}

	// A tampered cookie is no session.
	u, _ := url.Parse(e.srv.URL())
	for _, c := range e.http.Jar.Cookies(u) {
		if c.Name == auth.SessionCookie {
			// The same id under a signature that is not the console's.
			forged := c.Value[:len(c.Value)-2] + "AA"
			if forged == c.Value {
				forged = c.Value[:len(c.Value)-2] + "BB"
			}
			e.http.Jar.SetCookies(u, []*http.Cookie{{Name: auth.SessionCookie, Value: forged, Path: "/"}})
		}
	}
	if st, _, _ := e.do("GET", page, nil, nil); st != 303 {
		t.Errorf("tampered session: %d, want 303 to sign in", st)
	}
	// Expiry, sign-out and other deployments: web/auth's sessions_test.go
	// and attack_test.go.
}

// Local mode is loopback only: any other listener needs an admin token, and
// the refusal happens before anything is bound.
func TestSecRefusesPublicListenWithoutToken(t *testing.T) {
	ctx := context.Background()
	for _, listen := range []string{":8080", "0.0.0.0:0", "[::]:0", "192.0.2.1:80"} {
		err := CheckExposure(ctx, listen, "", "")
		if err == nil || !strings.Contains(err.Error(), "without an admin token") {
			t.Errorf("CheckExposure(%q) = %v, want a refusal", listen, err)
		}
		if err := CheckExposure(ctx, listen, adminTok, ""); err != nil {
			t.Errorf("CheckExposure(%q) with a token: %v", listen, err)
		}
	}
	for _, listen := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		if err := CheckExposure(ctx, listen, "", ""); err != nil {
			t.Errorf("CheckExposure(%q) = %v, want local mode", listen, err)
		}
	}
	if err := CheckExposure(ctx, "127.0.0.1:0", "", "viewer"); err == nil {
		t.Error("a viewer token without an admin token was accepted")
	}
	if err := CheckExposure(ctx, "127.0.0.1:0", "same", "same"); err == nil {
		t.Error("one token for both roles was accepted")
	}
	srv := New(Config{Inspector: inspect.New(nil, nil), Listen: "192.0.2.1:0"})
	if err := srv.Open(ctx); err == nil || !strings.Contains(err.Error(), "LOCKWARDEN_ADMIN_TOKEN") {
		srv.Close()
		t.Errorf("Open on a public address without a token: %v", err)
	}
}

// A cross-site or cross-origin POST to force-unlock is 403, says why, and
// the lock stays, in local mode too (where every request is an admin).
func TestSecCrossSitePostRefused(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "lock"
	e.makeLock(name, "w1", 1, time.Minute)
	action := "/locks/" + esc(name) + "/force-unlock"
	for _, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		{"Origin": "http://evil.example"},
		{"Sec-Fetch-Site": "cross-site", "Origin": "null"},                    // a sandboxed frame on another site
		{"Origin": "null"},                                                    // the same, from a browser without Sec-Fetch-Site
		{"Origin": strings.Replace(e.srv.URL(), "127.0.0.1", "localhost", 1)}, // same port, other origin
		{"Sec-Fetch-Site": "cross-site", "Authorization": "Bearer local"},     // a page cannot be let in by a header it adds
	} {
		body, h := form("holder", holderID("w1"), "reason", "attack")
		for k, v := range hdr {
			h[k] = v
		}
		st, _, b := e.do("POST", action, body, h)
		if st != 403 || !strings.Contains(string(b), "cross-origin request refused") {
			t.Errorf("POST with %v: %d, want 403 saying why; body %.200s", hdr, st, b)
		}
	}
	if n, _ := e.rdb.Exists(t.Context(), name).Result(); n != 1 {
		t.Fatal("a refused request broke the lock")
	}
}

// The refusal goes through the one error mapping: JSON for the API and
// for clients asking for JSON, the HTML error page for browsers.
func TestSecCrossOriginRefusalFormat(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "rl"
	e.makeBucket(name, 100, "10")
	h := map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}
	st, hdr, b := e.do("PUT", "/api/limiters/"+esc(name), strings.NewReader(`{"rate":20,"interval_ms":5,"reason":"test"}`), h)
	var er apiErr
	if st != 403 || json.Unmarshal(b, &er) != nil || !strings.Contains(er.Error, "Origin does not match Host") {
		t.Errorf("API refusal: %d %s %s", st, hdr.Get("Content-Type"), b)
	}
	body, fh := form("rate", "20", "interval_ms", "5")
	fh["Sec-Fetch-Site"], fh["Accept"] = "cross-site", "text/html"
	st, hdr, b = e.do("POST", "/limiters/"+esc(name), body, fh)
	if st != 403 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") ||
		!strings.Contains(parseHTML(t, b).Text(), "cross-origin request refused") {
		t.Errorf("page refusal: %d %s %.300s", st, hdr.Get("Content-Type"), b)
	}
	if h := e.hgetall(name); h["max_permits"] != "100" {
		t.Errorf("refused requests changed the limiter: %v", h)
	}
}

// What a browser sends for the console's own forms is accepted: Sec-Fetch-
// Site same-origin (with "Origin: null", which our no-referrer policy can
// cause), or, from a browser without Sec-Fetch-Site, an Origin naming the
// Host.
func TestSecSameOriginPostAccepted(t *testing.T) {
	e := newEnv(t, nil)
	for i, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "same-origin", "Origin": "null"},
		{"Sec-Fetch-Site": "same-origin", "Origin": e.srv.URL()},
		{"Origin": e.srv.URL()},
	} {
		name := fmt.Sprintf("%slock%d", e.prefix, i)
		e.makeLock(name, "w1", 1, time.Minute)
		body, h := form("holder", holderID("w1"), "reason", "real")
		for k, v := range hdr {
			h[k] = v
		}
		if st, _, b := e.do("POST", "/locks/"+esc(name)+"/force-unlock", body, h); st != 303 {
			t.Errorf("POST with %v: %d, want 303; %.200s", hdr, st, b)
		}
		if n, _ := e.rdb.Exists(t.Context(), name).Result(); n != 0 {
			t.Errorf("POST with %v left the lock", hdr)
		}
	}
}

// A script (curl) sends neither Origin nor Sec-Fetch-Site and has no page
// to take a token from: it may change things in local mode and with an
// admin Bearer token. Before cross-origin protection replaced the CSRF
// token, the local-mode PUT answered 403 "missing or invalid CSRF token".
func TestSecScriptMutationWithoutOrigin(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  func(*Config)
		hdr  map[string]string
	}{
		{"local mode", nil, map[string]string{"Content-Type": "application/json"}},
		{"admin Bearer", withTokens, bearerOf(adminTok)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opt)
			name := e.prefix + "rl"
			e.makeBucket(name, 100, "10")
			st, _, b := e.do("PUT", "/api/limiters/"+esc(name), strings.NewReader(`{"rate":20,"interval_ms":5,"reason":"test"}`), tc.hdr)
			if st != 200 {
				t.Fatalf("PUT: %d %s, want 200", st, b)
			}
			if h := e.hgetall(name); h["max_permits"] != "20" {
				t.Errorf("bucket after PUT: %v", h)
			}
		})
	}
}

// Behind a proxy that rewrites Host, an old browser's Origin names the
// proxy's host: an --allowed-host entry makes that origin trusted; any
// other origin is still refused.
func TestSecAllowedHostOriginTrusted(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AllowedHosts = []string{"console.example:8443"} })
	name := e.prefix + "rl"
	e.makeBucket(name, 100, "10")
	put := func(origin string) int {
		st, _, _ := e.do("PUT", "/api/limiters/"+esc(name), strings.NewReader(`{"rate":20,"interval_ms":5,"reason":"test"}`),
			map[string]string{"Content-Type": "application/json", "Origin": origin})
		return st
	}
	if st := put("https://console.example:9999"); st != 403 {
		t.Errorf("other port of an allowed host: %d, want 403", st)
	}
	if st := put("https://console.example:8443"); st != 200 {
		t.Errorf("allowed host's origin: %d, want 200", st)
	}
}

// Websocket upgrades from another host, or this host on another port, are
// refused; the console's own origin is not.
func TestSecWebsocketOrigin(t *testing.T) {
	e := newEnv(t, nil)
	u, _ := url.Parse(e.srv.URL())
	otherPort := "http://" + u.Hostname() + ":1"
	for _, o := range []string{"http://evil.example", otherPort, "null", "file://"} {
		_, resp, err := e.dialWS(http.Header{"Origin": {o}}, nil)
		if err == nil || resp == nil || resp.StatusCode != 403 {
			t.Errorf("origin %q: %v %v, want 403", o, resp, err)
		}
	}
	c, _, err := e.dialWS(http.Header{"Origin": {e.srv.URL()}}, nil)
	if err != nil {
		t.Fatalf("same origin refused: %v", err)
	}
	c.Close()
	// With tokens, an anonymous upgrade is refused and a viewer's accepted.
	e2 := newEnv(t, withTokens)
	if _, resp, err := e2.dialWS(nil, nil); err == nil || resp.StatusCode != 401 {
		t.Errorf("anonymous websocket: %v, want 401", resp)
	}
	c, _, err = e2.dialWS(http.Header{"Authorization": {"Bearer " + viewerTok}}, nil)
	if err != nil {
		t.Fatalf("viewer websocket refused: %v", err)
	}
	c.Close()
}

// hostReq sends a GET with an explicit Host header.
func (e *testEnv) hostReq(path, host string) int {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL()+path, nil)
	req.Host = host
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// DNS rebinding: a page on evil.example whose name now points at
// 127.0.0.1 sends Host: evil.example, and is refused.
func TestSecHostAllowList(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AllowedHosts = []string{"console.example", "proxy.example:443"} })
	u, _ := url.Parse(e.srv.URL())
	port := u.Port()
	for host, want := range map[string]int{
		"evil.example":             403,
		"evil.example:" + port:     403,
		"127.0.0.1:" + port:        200,
		"localhost:" + port:        200,
		"LOCALHOST:" + port:        200,
		"[::1]:" + port:            200,
		"127.0.0.1:1":              403,
		"console.example":          200,
		"console.example:8443":     200,
		"proxy.example:443":        200,
		"proxy.example:80":         403,
		"127.0.0.1.evil.example":   403,
		"localhost.:" + port + "x": 403,
	} {
		for _, p := range []string{"/", "/api/locks", "/ws"} {
			st := e.hostReq(p, host)
			if p == "/ws" && want == 200 {
				want = 400 // allowed, then refused as not an upgrade
			}
			if st != want {
				t.Errorf("GET %s Host %q: %d, want %d", p, host, st, want)
			}
		}
	}
	// Probes answer whatever the Host: orchestrators use the pod IP.
	if st := e.hostReq("/healthz", "10.1.2.3:8080"); st != 200 {
		t.Errorf("healthz with a foreign Host: %d", st)
	}
}

// Every response carries a CSP without unsafe-inline, nosniff, frame
// protection and no-referrer.
func TestSecHeaders(t *testing.T) {
	e := newEnv(t, nil)
	for _, p := range []string{"/", "/locks", "/api/locks", "/nothing-here", "/static/live.js", "/login"} {
		_, h, _ := e.do("GET", p, nil, nil)
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP allows unsafe sources: %q", p, csp)
		}
		for k, want := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"} {
			if got := h.Get(k); got != want {
				t.Errorf("%s: %s = %q, want %q", p, k, got, want)
			}
		}
	}
}

func infoField(t *testing.T, rdb *redis.Client, section, field string) string {
	t.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return ""
}

// Names, holders and values are data: hostile ones reach Redis only as
// KEYS/ARGV (no new keys, no new scripts) and pages render them escaped.
func TestSecHostileNames(t *testing.T) {
	rs := redistest.StartT(t)
	rdb := redistest.NewClient(t, rs)
	// No history: it writes keys of its own (the lock below is kept),
	// which the DBSIZE comparison would count.
	e := newEnvOn(t, rdb, func(c *Config) { c.Match = "*"; c.HistoryTop = -1 })
	ctx := context.Background()

	// Warm up: every script the console runs is loaded, the audit stream
	// exists.
	e.makeBucket("warm:rl", 10, "10")
	e.makeLock("warm:lock", "w", 1, time.Minute)
	e.sendJSON("PUT", "/api/limiters/warm:rl", `{"rate":11,"interval_ms":10,"reason":"test"}`, 200, nil)
	e.sendJSON("POST", "/api/locks/warm:lock/force-unlock", `{"holder":"`+holderID("w")+`","reason":"warm"}`, 200, nil)
	e.rdb.Del(ctx, "warm:rl", redistest.StatsKey("warm:rl"))
	eventually(t, 10*time.Second, "stats keys to expire", func() bool {
		n, _ := e.rdb.DBSize(ctx).Result()
		return n == 1 // the audit stream
	})
	keys := e.rdb.DBSize(ctx).Val()
	scripts := infoField(t, rdb, "memory", "number_of_cached_scripts")

	hostile := []string{
		`x') redis.call('set','pwned','1') --`, `"]]; redis.call("flushall") --[[`, "*", "?", "[a-z]*", "{", "}", "a{b}c",
		"\r\nSET pwned 1\r\n", "\x00", "../../etc", `<script>alert(1)</script>`, "ключ 🔒", strings.Repeat("z", store.MaxNameLen),
	}
	for _, n := range hostile {
		p := esc(n)
		for _, path := range []string{"/locks/" + p, "/api/locks/" + p, "/limiters/" + p, "/api/limiters/" + p, "/locks?match=" + url.QueryEscape(n)} {
			if st, _, b := e.do("GET", path, nil, nil); st >= 500 {
				t.Errorf("GET %.60q: %d %s", path, st, b)
			}
		}
		hj, _ := json.Marshal(n)
		for _, m := range []struct{ method, path, body string }{
			{"POST", "/api/locks/" + p + "/force-unlock", `{"holder":` + string(hj) + `,"reason":` + string(hj) + `}`},
			{"PUT", "/api/limiters/" + p, `{"rate":5,"interval_ms":1,"reason":"test"}`},
		} {
			if st, _, b := e.do(m.method, m.path, strings.NewReader(m.body), bearer); st >= 500 || st < 400 {
				t.Errorf("%s %.60q: %d %s, want a 4xx", m.method, m.path, st, b)
			}
		}
	}
	if n := e.rdb.DBSize(ctx).Val(); n != keys {
		all, _ := e.rdb.Keys(ctx, "*").Result()
		t.Errorf("DBSIZE %d after hostile names, was %d: %q", n, keys, all)
	}
	if s := infoField(t, rdb, "memory", "number_of_cached_scripts"); s != scripts {
		t.Errorf("script cache went from %s to %s scripts: input became script text", scripts, s)
	}

	// Rendered escaped.
	evil := `<script>alert(1)</script>`
	holder := holderID(`"><img src=x onerror=alert(1)>`)
	e.rdb.HSet(ctx, evil, holder, 1)
	e.rdb.PExpire(ctx, evil, time.Minute)
	for _, path := range []string{"/locks/" + esc(evil), "/locks"} {
		e2 := newEnvOn(t, rdb, func(c *Config) { c.Match = "*" })
		st, _, b := e2.do("GET", path, nil, nil)
		if st != 200 || bytes.Contains(b, []byte(evil)) || bytes.Contains(b, []byte("<img")) {
			t.Errorf("GET %s: %d, hostile name or holder rendered as markup", path, st)
		}
		if doc := parseHTML(t, b); !strings.Contains(doc.Text(), evil) {
			t.Errorf("GET %s does not show the name as text", path)
		}
	}
}

// A handler panic is a 500 that reveals nothing, through the one error
// mapping, and the stack reaches the log with the request ID.
func TestSecPanicIs500(t *testing.T) {
	var logBuf bytes.Buffer
	s := New(Config{Logger: slog.New(slog.NewJSONHandler(&logBuf, nil))})
	s.echo.GET("/api/panic", func(echo.Context) error { panic("secret detail") })
	req := httptest.NewRequest(http.MethodGet, "/api/panic", nil)
	req.Host = "127.0.0.1:8080"
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	var er apiErr
	if rec.Code != 500 || json.Unmarshal(rec.Body.Bytes(), &er) != nil || er.Error != "internal error" {
		t.Errorf("panic answered %d %s", rec.Code, rec.Body)
	}
	id := rec.Header().Get("X-Request-ID")
	logged := logBuf.String()
	if id == "" || !strings.Contains(logged, `"request_id":"`+id+`"`) || !strings.Contains(logged, "secret detail") ||
		!strings.Contains(logged, "goroutine") {
		t.Errorf("panic log lacks the request ID %q, the panic or its stack: %s", id, logged)
	}
}
