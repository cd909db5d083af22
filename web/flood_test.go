package web

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/auth"
)

// Floods from many addresses, made as an attacker on this machine makes
// them: every 127.0.0.0/8 address is loopback on Linux, so a client bound
// to 127.0.0.x is a source of its own to the console (auth.Source), as
// another host would be. Every loop is bounded.

// clientFrom is an HTTP client whose connections come from ip.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	jar, _ := cookiejar.New(nil)
	return &http.Client{
		Jar:           jar,
		Timeout:       10 * time.Second,
		Transport:     &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// doFrom sends a request to the console through c and returns the status
// and the body.
func (e *testEnv) doFrom(c *http.Client, method, path string, body io.Reader, hdr map[string]string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.srv.URL()+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// Wrong tokens from 40 addresses (four each, within every address's own
// free failures, 160 in all: past the allowance of all sources together)
// never keep the admin's correct token out: on Bearer, on the sign-in
// form and on a Prometheus scrape, from an address that did not guess.
// Guessing stays costly: once the flood passed the overall allowance,
// every guessing address waits after its next wrong token, a new one's
// first included.
func TestAttackFloodFromManyAddressesLeavesAdminIn(t *testing.T) {
	e := newEnv(t, withTokens)
	limited := 0
	for i := range 160 {
		c := clientFrom("127.0.0." + strconv.Itoa(10+i%40))
		switch st, _ := e.doFrom(c, "GET", "/api/locks", nil, bearerOf("guess-"+strconv.Itoa(i))); st {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("wrong token %d: %d", i, st)
		}
	}
	if limited == 0 {
		t.Fatal("160 wrong tokens from 40 addresses, none answered 429: guessing from many addresses costs nothing")
	}
	admin := clientFrom("127.0.0.200")
	if st, b := e.doFrom(admin, "GET", "/api/locks", nil, bearerOf(adminTok)); st != http.StatusOK {
		t.Fatalf("the admin's Bearer token after the flood: %d %.200s", st, b)
	}
	if st, b := e.doFrom(admin, "GET", "/metrics", nil, bearerOf(adminTok)); st != http.StatusOK {
		t.Fatalf("a Prometheus scrape with the admin's token after the flood: %d %.200s", st, b)
	}
	body, hdr := form("token", adminTok, "next", "/")
	if st, b := e.doFrom(admin, "POST", "/login", body, hdr); st != http.StatusSeeOther {
		t.Fatalf("the admin's sign-in after the flood: %d %.200s", st, b)
	}
	// A fresh guessing address: its first wrong token is checked (401),
	// and makes it wait (429 for the next, the right token included).
	guesser := clientFrom("127.0.0.201")
	if st, _ := e.doFrom(guesser, "GET", "/api/locks", nil, bearerOf("guess-new")); st != http.StatusUnauthorized {
		t.Fatalf("a new address's first wrong token during the flood: %d, want 401", st)
	}
	if st, _ := e.doFrom(guesser, "GET", "/api/locks", nil, bearerOf(adminTok)); st != http.StatusTooManyRequests {
		t.Fatalf("the same address right after: %d, want 429 (it waits the overall wait)", st)
	}
}

// idleConns opens n connections to the console from the addresses of
// from (round robin), sends each one anonymous GET /healthz, and leaves
// them open: a browser's keep-alive, or an attacker's. It returns how many
// were answered within a few seconds, and closes them at the test's end.
func (e *testEnv) idleConns(n int, from func(i int) string) int {
	e.t.Helper()
	addr := strings.TrimPrefix(e.srv.URL(), "http://")
	conns := make([]net.Conn, 0, n)
	e.t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range n {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from(i))}, Timeout: 5 * time.Second}
		c, err := d.DialContext(e.t.Context(), "tcp", addr)
		if err != nil {
			e.t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
			e.t.Fatalf("connection %d: %v", i, err)
		}
	}
	var answered atomic.Int64
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
				answered.Add(1)
			}
			_ = c.SetReadDeadline(time.Time{})
		}()
	}
	wg.Wait()
	return int(answered.Load())
}

// Idle connections, one anonymous GET /healthz each, more than the
// console's 1,024: 1,030 from one address, and 1,040 from 20 addresses
// (52 each, within every address's share). The admin, from another
// address, is still served at once (the client gives up after 10 s; the
// idle connections would hold the cap for minutes): one address gets a
// share of the cap, and at the cap a new connection closes the
// longest-idle anonymous one.
func TestAttackIdleConnections(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		from func(i int) string
	}{
		{"one-address", 1030, func(int) string { return "127.0.0.50" }},
		{"twenty-addresses", 1040, func(i int) string { return "127.0.0." + strconv.Itoa(60+i%20) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withTokens)
			answered := e.idleConns(tc.n, tc.from)
			t.Logf("%d of %d connections answered", answered, tc.n)
			start := time.Now()
			if st, b := e.doFrom(clientFrom("127.0.0.200"), "GET", "/api/locks", nil, bearerOf(adminTok)); st != http.StatusOK {
				t.Fatalf("the admin's request: %d %.200s", st, b)
			}
			t.Logf("the admin was served in %v", time.Since(start))
		})
	}
}

// A viewer signs in 1,100 times in a loop. The change trail still shows
// the admin's change and no sign-in; the sign-ins are one summary record
// in the sign-in trail; the viewer's token keeps at most its cap of
// sessions (the oldest ended), and the admin's session lives on.
func TestAttackSignInLoop(t *testing.T) {
	e := newEnv(t, withTokens)
	rl := e.prefix + "rl"
	e.makeBucket(rl, 100, "10")
	e.sendJSONAuth("PUT", "/api/limiters/"+esc(rl), `{"rate":7,"interval_ms":10,"reason":"test"}`, adminTok, 200)
	if st, _, _ := e.signIn(adminTok, "/", nil); st != http.StatusSeeOther {
		t.Fatalf("the admin's sign-in: %d", st)
	}
	admin := e.http.Jar
	e.http.Jar = nil
	var first, last string
	for i := range 1100 {
		body, hdr := form("token", viewerTok, "next", "/")
		st, h, _ := e.do("POST", "/login", body, hdr)
		if st != http.StatusSeeOther {
			t.Fatalf("viewer sign-in %d: %d", i, st)
		}
		ck := (&http.Response{Header: h}).Cookies()
		if len(ck) != 1 {
			t.Fatalf("viewer sign-in %d: cookies %v", i, ck)
		}
		if i == 0 {
			first = ck[0].Value
		}
		last = ck[0].Value
	}
	e.srv.writeAuditSummaries(t.Context())

	e.http.Jar = admin
	var changes int
	for _, r := range e.auditRecords(nil) {
		if r.Action == "sign-in" {
			t.Fatalf("a sign-in in the change trail: %+v", r)
		}
		if r.Target == rl && r.Outcome == inspect.OutcomeOK {
			changes++
		}
	}
	if changes != 1 {
		t.Fatalf("the admin's change: %d records in the change trail, want 1", changes)
	}
	var signIns auditList
	st, _, b := e.do("GET", "/api/audit?trail=sign-ins", nil, nil)
	if err := json.Unmarshal(b, &signIns); st != 200 || err != nil {
		t.Fatalf("the sign-in trail: %d %v %.300s", st, err, b)
	}
	var viewer []inspect.AuditRecord
	for _, r := range signIns.Records {
		if r.Role == "viewer" {
			viewer = append(viewer, r)
		}
	}
	if len(viewer) != 1 || !strings.HasPrefix(viewer[0].Detail, "1100 sign-ins as viewer from 127.0.0.1") {
		t.Fatalf("the viewer's sign-ins in the sign-in trail: %+v", viewer)
	}

	keys := auth.NewKeys(e.srv.cfg.AuthNamespace)
	var sessions int
	it := e.rdb.Scan(t.Context(), 0, keys.Session("*"), 1000).Iterator()
	for it.Next(t.Context()) {
		sessions++
	}
	if sessions > auth.DefaultMaxSessionsPerRole+1 {
		t.Fatalf("%d sessions in Redis after 1,100 sign-ins, want at most %d", sessions, auth.DefaultMaxSessionsPerRole+1)
	}
	cookie := func(v string) map[string]string { return map[string]string{"Cookie": auth.SessionCookie + "=" + v} }
	e.http.Jar = nil
	if st, _, _ := e.do("GET", "/api/locks", nil, cookie(first)); st != http.StatusUnauthorized {
		t.Fatalf("the viewer's first session, 1,099 sign-ins later: %d, want 401", st)
	}
	if st, _, _ := e.do("GET", "/api/locks", nil, cookie(last)); st != http.StatusOK {
		t.Fatalf("the viewer's last session: %d", st)
	}
	e.http.Jar = admin
	if st, _, _ := e.do("GET", "/api/locks", nil, nil); st != http.StatusOK {
		t.Fatalf("the admin's session after the viewer's sign-ins: %d", st)
	}
}
