package web

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/auth"
)

// The attacks of issue 23, made as an attacker would make them against a
// console in token mode on loopback. Every loop is bounded.

// Refused and unauthenticated requests, however many, never push an
// admin's change out of the trail /api/audit shows.
func TestAttackRefusedFloodKeepsAdminRecords(t *testing.T) {
	e := newEnv(t, func(c *Config) { withTokens(c); c.AuditMaxLen = 50 })
	rl := e.prefix + "rl"
	e.makeBucket(rl, 100, "10")
	e.sendJSONAuth("PUT", "/api/limiters/"+esc(rl), `{"rate":7,"interval_ms":10,"reason":"test"}`, adminTok, 200)

	junk := "/api/locks/" + esc(e.prefix+"junk-1") + "/force-unlock"
	for i := range 400 {
		switch i % 4 {
		case 0: // anonymous
			e.do("POST", junk, strings.NewReader(`{}`), map[string]string{"Content-Type": "application/json"})
		case 1: // an unknown route
			e.do("POST", "/no/such/route/"+strconv.Itoa(i), nil, nil)
		case 2: // a cross-site form post through a visitor's browser
			e.do("POST", junk, strings.NewReader("x=1"), map[string]string{"Sec-Fetch-Site": "cross-site",
				"Origin": "https://evil.example", "Content-Type": "application/x-www-form-urlencoded"})
		case 3: // a viewer trying a change
			e.do("POST", junk, strings.NewReader(`{}`), bearerOf(viewerTok))
		}
	}
	var found bool
	for _, r := range e.auditRecords(bearerOf(adminTok)) {
		if r.Target == rl && r.Role == "admin" && r.Outcome == inspect.OutcomeOK {
			found = true
		}
	}
	if !found {
		t.Fatal("after 400 refused requests the admin's change is gone from /api/audit")
	}
	_, _, b := e.do("GET", "/metrics", nil, bearerOf(adminTok))
	if v, ok := metricSum(b, "lockwarden_audit_refused_total"); !ok || v < 1 {
		t.Errorf("/metrics does not count refused requests: lockwarden_audit_refused_total %v (present %v)", v, ok)
	}
}

// Guessing tokens from one address soon gets 429 with Retry-After, even
// for the right token; the failures are counted and summarised.
func TestAttackTokenGuessingIsLimited(t *testing.T) {
	e := newEnv(t, withTokens)
	limited := -1
	for i := range 40 {
		st, h, _ := e.do("GET", "/api/locks", nil, bearerOf("guess-"+strconv.Itoa(i)))
		if st == http.StatusTooManyRequests {
			if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 {
				t.Fatalf("429 with Retry-After %q", h.Get("Retry-After"))
			}
			limited = i
			break
		}
	}
	if limited < 0 {
		t.Fatal("40 wrong Bearer tokens in a row and none was answered 429")
	}
	if st, _, _ := e.do("GET", "/api/locks", nil, bearerOf(adminTok)); st != http.StatusTooManyRequests {
		t.Fatalf("the right token from the guessing address: %d, want 429 until the wait ends", st)
	}
	body, hdr := form("token", adminTok, "next", "/")
	if st, _, _ := e.do("POST", "/login", body, hdr); st != http.StatusTooManyRequests {
		t.Fatalf("the sign-in form from the guessing address: %d, want 429", st)
	}
}

// The failures above are visible: counted in /metrics and recorded in the
// trail of refused requests, not dropped. (Read as a session opened before
// the guessing started, which the limit does not touch.)
func TestAttackGuessingIsVisible(t *testing.T) {
	e := newEnv(t, withTokens)
	if st, _, _ := e.signIn(adminTok, "/", nil); st != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", st)
	}
	for i := range 25 {
		e.do("GET", "/api/locks", nil, map[string]string{"Authorization": "Bearer guess-" + strconv.Itoa(i)})
	}
	_, _, b := e.do("GET", "/metrics", nil, nil)
	if v, ok := metricSum(b, "lockwarden_auth_failures_total"); !ok || v < 1 {
		t.Fatalf("/metrics counts %v wrong tokens (present %v) after 25: lockwarden_auth_failures_total", v, ok)
	}
	st, _, rb := e.do("GET", "/api/audit?trail=refused", nil, nil)
	if st != 200 || !strings.Contains(string(rb), `"sign-in"`) {
		t.Fatalf("the refused trail: %d %.500s", st, rb)
	}
	eventually(t, 5*time.Second, "the auth-failures alert", func() bool {
		_, _, ab := e.do("GET", "/api/alerts", nil, nil)
		return strings.Contains(string(ab), `"auth-failures"`)
	})
}

// metricSum adds up the samples of the metric name in a /metrics answer
// (every label set); ok says there was one. The # HELP and # TYPE lines
// name the metric too, so a check that only looks for the name passes
// whether it counts or not.
func metricSum(body []byte, name string) (sum float64, ok bool) {
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		rest, found := strings.CutPrefix(line, name)
		if !found || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if i := strings.LastIndex(rest, "}"); i >= 0 {
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum, ok = sum+v, true
		}
	}
	return sum, ok
}

// oldSessionCookie is what a viewer could compute offline with the scheme
// of issue 23: the key was HMAC("lockwarden session key v1", admin‖viewer)
// and the cookie "role|fp|expiry" signed with it. A viewer knows its own
// token; a weak admin token falls to guessing.
func oldSessionCookie(adminGuess, viewer string) string {
	m := hmac.New(sha256.New, []byte("lockwarden session key v1"))
	m.Write([]byte(adminGuess))
	m.Write([]byte{0})
	m.Write([]byte(viewer))
	key := m.Sum(nil)
	sum := sha256.Sum256([]byte(adminGuess))
	payload := "admin|" + hex.EncodeToString(sum[:4]) + "|253402300799"
	s := hmac.New(sha256.New, key)
	s.Write([]byte(payload))
	b := base64.RawURLEncoding
	return b.EncodeToString([]byte(payload)) + "." + b.EncodeToString(s.Sum(nil))
}

// A viewer who guessed the admin token (and who knows its own) forges an
// admin cookie offline: refused. The admin's fingerprint shown to viewers
// is not the token's bare hash either, which would let guesses be checked
// offline.
func TestAttackViewerForgesAdminSessionOffline(t *testing.T) {
	e := newEnv(t, withTokens)
	rl := e.prefix + "rl"
	e.makeBucket(rl, 100, "10")
	forged := oldSessionCookie(adminTok, viewerTok)
	st, _, b := e.do("PUT", "/api/limiters/"+esc(rl), strings.NewReader(`{"rate":5,"interval_ms":1,"reason":"test"}`),
		map[string]string{"Cookie": auth.SessionCookie + "=" + forged, "Content-Type": "application/json"})
	if st == 200 || e.hgetall(rl)["max_permits"] != "100" {
		t.Fatalf("a cookie forged offline changed a limiter: %d %s", st, b)
	}
	e.sendJSONAuth("PUT", "/api/limiters/"+esc(rl), `{"rate":9,"interval_ms":10,"reason":"test"}`, adminTok, 200)
	sum := sha256.Sum256([]byte(adminTok))
	for _, r := range e.auditRecords(bearerOf(viewerTok)) {
		if r.Role == "admin" && strings.HasPrefix(hex.EncodeToString(sum[:]), r.Fingerprint) {
			t.Fatalf("viewers see the admin token's bare SHA-256 prefix %q", r.Fingerprint)
		}
	}
}

// adminCookie signs in as admin and returns the session cookie.
func (e *testEnv) adminCookie() string {
	e.t.Helper()
	st, h, _ := e.signIn(adminTok, "/", nil)
	ck := sessionCookieOf(h)
	if st != http.StatusSeeOther || ck == nil {
		e.t.Fatalf("sign-in: %d, cookie %v", st, ck)
	}
	return ck.Value
}

// A session cookie copied before sign-out is dead after it.
func TestAttackCookieReplayedAfterSignOut(t *testing.T) {
	e := newEnv(t, withTokens)
	ck := e.adminCookie()
	with := map[string]string{"Cookie": auth.SessionCookie + "=" + ck, "Accept": "application/json"}
	if st, _, _ := e.do("GET", "/api/locks", nil, with); st != 200 {
		t.Fatalf("with the cookie: %d", st)
	}
	if st, _, _ := e.do("POST", "/logout", nil, with); st != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", st)
	}
	if st, _, _ := e.do("GET", "/api/locks", nil, with); st != http.StatusUnauthorized {
		t.Fatalf("the copied cookie after sign-out: %d, want 401", st)
	}
}

// A cookie from one deployment does not open another that happens to use
// the same tokens (its own Redis data, here its own auth namespace).
func TestAttackCookieFromAnotherDeployment(t *testing.T) {
	a := newEnv(t, withTokens)
	b := newEnv(t, func(c *Config) { withTokens(c); otherDeployment(c) })
	ck := a.adminCookie()
	st, _, _ := b.do("GET", "/api/locks", nil, map[string]string{"Cookie": auth.SessionCookie + "=" + ck, "Accept": "application/json"})
	if st != http.StatusUnauthorized {
		t.Fatalf("another deployment's cookie: %d, want 401", st)
	}
}

// A request whose body trickles in holds its connection no longer than
// the read deadline.
func TestAttackSlowBodyIsCut(t *testing.T) {
	e := newEnv(t, func(c *Config) { withTokens(c); shortReadTimeout(c) })
	u, _ := url.Parse(e.srv.URL())
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /login HTTP/1.1\r\nHost: " + u.Host +
		"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	// One byte every 200 ms for at most 10 s; a console that cuts the
	// request answers (or closes) well before.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, _ = bufio.NewReader(conn).ReadByte() // a response or EOF
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < 50; i++ {
		select {
		case <-closed:
			return
		case <-tick.C:
			if _, err := conn.Write([]byte("t")); err != nil {
				return // the server closed the connection
			}
		}
	}
	t.Fatal("a body sent one byte every 200 ms held its connection for 10 s")
}

// A viewer opening websockets in a loop cannot take the admin's: its own
// address is capped below the total (429 past it), so a viewer at another
// address still gets one, and the admin always gets a slot.
func TestAttackViewerExhaustsWebsocketSlots(t *testing.T) {
	e := newEnv(t, func(c *Config) { withTokens(c); c.MaxWSClients = 20; c.MaxWSPerSource = 3 })
	viewer := http.Header{"Authorization": {"Bearer " + viewerTok}}
	opened, refused := 0, 0
	for range 10 {
		c, resp, err := e.dialWS(viewer, nil)
		if err != nil {
			if resp != nil && resp.StatusCode == http.StatusTooManyRequests {
				refused++
			}
			continue
		}
		opened++
		defer c.Close()
	}
	if opened != 3 || refused != 7 {
		t.Fatalf("one address opened %d viewer websockets (%d refused 429), want its cap of 3", opened, refused)
	}
	other := &websocket.Dialer{HandshakeTimeout: 5 * time.Second,
		NetDialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}
	c, _, err := e.dialWS(viewer, other)
	if err != nil {
		t.Fatalf("a viewer at another address after the first one's flood: %v", err)
	}
	c.Close()
	c, resp, err := e.dialWS(http.Header{"Authorization": {"Bearer " + adminTok}}, nil)
	if err != nil {
		st := 0
		if resp != nil {
			st = resp.StatusCode
		}
		t.Fatalf("the admin's websocket after a viewer's flood: %v (%d)", err, st)
	}
	c.Close()
}

// A long filter is refused with a 400 that says why, before it costs
// anything.
func TestAttackLongGlobRefused(t *testing.T) {
	e := newEnv(t, withTokens)
	st, _, b := e.do("GET", "/api/locks?match="+url.QueryEscape(strings.Repeat("*a", 500)), nil, bearerOf(viewerTok))
	if st != http.StatusBadRequest || !strings.Contains(string(b), "match") {
		t.Fatalf("a 1000-byte glob: %d %s, want 400 naming match", st, b)
	}
}

// Nothing that needs a role may be kept by a cache on the way.
func TestAttackRoleResponsesNotCached(t *testing.T) {
	e := newEnv(t, withTokens)
	for _, p := range []string{"/api/locks", "/api/audit", "/api/status", "/metrics", "/locks", "/audit"} {
		_, h, _ := e.do("GET", p, nil, bearerOf(viewerTok))
		if !strings.Contains(h.Get("Cache-Control"), "no-store") {
			t.Errorf("GET %s: Cache-Control %q, want no-store", p, h.Get("Cache-Control"))
		}
	}
}

// --match bounds what may be changed, not only what is listed: a name
// outside it is 404 for every action.
func TestAttackMatchBoundsActions(t *testing.T) {
	e := newEnv(t, func(c *Config) { withTokens(c); c.Match = strings.TrimSuffix(c.Match, "*") + "lock:*" })
	ctx := context.Background()
	outside := e.prefix + "bulk:lock:1"
	e.makeLock(outside, "w1", 1, time.Minute)
	bucket := e.prefix + "bulk:rl"
	e.makeBucket(bucket, 100, "10")
	counter := e.prefix + "bulk:ip"
	e.rdb.Set(ctx, counter, 3, time.Minute)
	t.Cleanup(func() { e.rdb.Del(context.Background(), outside, counter) })
	for _, m := range []struct{ method, path, body string }{
		{"GET", "/api/locks/" + esc(outside), ""},
		{"POST", "/api/locks/" + esc(outside) + "/force-unlock", `{"holder":"` + holderID("w1") + `","reason":"x"}`},
		{"PUT", "/api/limiters/" + esc(bucket), `{"rate":5,"interval_ms":1,"reason":"test"}`},
		{"POST", "/api/limiters/" + esc(counter) + "/reset", `{}`},
	} {
		if st, _, b := e.do(m.method, m.path, strings.NewReader(m.body), bearerOf(adminTok)); st != http.StatusNotFound {
			t.Errorf("%s %s outside --match: %d %s, want 404", m.method, m.path, st, b)
		}
	}
	if e.rdb.Exists(ctx, outside).Val() != 1 || e.hgetall(bucket)["max_permits"] != "100" || e.rdb.Get(ctx, counter).Val() != "3" {
		t.Fatal("an action outside --match changed something")
	}
}

// The success banner shows only text the server wrote, never text from
// the link that led there.
func TestAttackFlashShowsOnlyServerText(t *testing.T) {
	e := newEnv(t, withTokens)
	e.adminCookie()
	const evil = "CALL-THIS-NUMBER-555"
	st, _, b := e.do("GET", "/locks?flash=unlocked&name="+evil, nil, nil)
	if st != 200 || strings.Contains(string(b), evil) {
		t.Fatalf("%d; the banner repeats attacker text: %v", st, strings.Contains(string(b), evil))
	}
	// The console's own redirect names what it changed; the same link
	// with another name (signature kept) names nothing.
	rl := e.prefix + "rl"
	e.makeBucket(rl, 100, "10")
	body, hdr := form("rate", "5", "interval_ms", "1", "reason", "test", "confirm", "yes")
	_, h, _ := e.do("POST", "/limiters/"+esc(rl), body, hdr)
	loc := h.Get("Location")
	if _, _, b := e.do("GET", loc, nil, nil); !strings.Contains(string(b), rl) {
		t.Fatalf("the console's own banner does not name %q (%s)", rl, loc)
	}
	swapped := strings.Replace(loc, "name="+url.QueryEscape(rl), "name="+evil, 1)
	if _, _, b := e.do("GET", swapped, nil, nil); swapped == loc || strings.Contains(string(b), evil) {
		t.Fatalf("a signed link with the name swapped shows it: %s", swapped)
	}
}

// A change whose audit record cannot be written is not made. The trail's
// key holding another type makes every append fail, as a full or
// read-only Redis would.
func TestAttackUnauditableChangeNotMade(t *testing.T) {
	e := newEnv(t, withTokens)
	rl := e.prefix + "rl"
	e.makeBucket(rl, 100, "10")
	ctx := context.Background()
	if err := e.rdb.Set(ctx, e.srv.cfg.AuditKey, "not a stream", 0).Err(); err != nil {
		t.Fatal(err)
	}
	st, _, b := e.do("PUT", "/api/limiters/"+esc(rl), strings.NewReader(`{"rate":5,"interval_ms":1,"reason":"test"}`), bearerOf(adminTok))
	if st < 500 || e.hgetall(rl)["max_permits"] != "100" {
		t.Fatalf("with the trail unwritable: %d %s, limiter %v; want 5xx and no change", st, b, e.hgetall(rl))
	}
}

// A wall display's websocket, opened with a session, ends soon after that
// session is signed out (from anywhere): it does not stream on.
func TestAttackWebsocketOutlivesSignOut(t *testing.T) {
	e := newEnv(t, func(c *Config) { withTokens(c); c.SessionRecheck = 100 * time.Millisecond })
	if st, _, _ := e.signIn(viewerTok, "/", nil); st != http.StatusSeeOther {
		t.Fatal("viewer sign-in")
	}
	u, _ := url.Parse(e.srv.URL())
	var cookie string
	for _, c := range e.http.Jar.Cookies(u) {
		if c.Name == auth.SessionCookie {
			cookie = c.Name + "=" + c.Value
		}
	}
	conn, _, err := e.dialWS(http.Header{"Cookie": {cookie}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if st, _, _ := e.do("POST", "/logout", nil, nil); st != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", st)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for range 10000 {
		if _, _, err = conn.ReadMessage(); err != nil {
			break
		}
	}
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation {
		t.Fatalf("after sign-out the websocket read %v, want a close 1008 within 5 s", err)
	}
}
