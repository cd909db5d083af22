package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/lockwarden/lockwarden/store/redistest"
)

func TestCmdServeFlagsOverEnv(t *testing.T) {
	env := map[string]string{
		"LOCKWARDEN_REDIS_URL":     "redis://env:6379",
		"LOCKWARDEN_LISTEN":        "127.0.0.1:9999",
		"LOCKWARDEN_ADMIN_TOKEN":   "env-token-0123456789",
		"LOCKWARDEN_VIEWER_TOKEN":  "env-viewer-0123456789",
		"LOCKWARDEN_ALLOWED_HOSTS": "console.example",
	}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name string
		args []string
		env  func(string) string
		want serveConfig
	}{
		{"defaults", nil, func(string) string { return "" },
			serveConfig{RedisURL: defaultRedisURL, Listen: defaultListen, Match: "*"}},
		{"env", nil, getenv,
			serveConfig{RedisURL: "redis://env:6379", Listen: "127.0.0.1:9999", Match: "*", AdminToken: "env-token-0123456789",
				ViewerToken: "env-viewer-0123456789", AllowedHosts: "console.example"}},
		{"flags win", []string{"--redis", "rediss://flag:1", "--listen=:0", "--match", "app:*", "--admin-token", "flag-token-0123456789",
			"--viewer-token", "flag-viewer-0123456789", "--allowed-host", "a.example, b.example:443"}, getenv,
			serveConfig{RedisURL: "rediss://flag:1", Listen: ":0", Match: "app:*", AdminToken: "flag-token-0123456789",
				ViewerToken: "flag-viewer-0123456789", AllowedHosts: "a.example, b.example:443"}},
		{"flag set to default still wins", []string{"--listen", defaultListen}, getenv,
			serveConfig{RedisURL: "redis://env:6379", Listen: defaultListen, Match: "*", AdminToken: "env-token-0123456789",
				ViewerToken: "env-viewer-0123456789", AllowedHosts: "console.example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseServeFlags(tt.args, tt.env, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.SessionIdle == 0 {
				tt.want.SessionIdle, tt.want.SessionMaxAge = defaultSessionIdle, defaultSessionMaxAge
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestCmdAllowedHostsSplit(t *testing.T) {
	got := serveConfig{AllowedHosts: " a.example, ,b.example:443,"}.allowedHosts()
	if strings.Join(got, "|") != "a.example|b.example:443" {
		t.Errorf("allowedHosts = %q", got)
	}
}

// A public listener without an admin token is refused before Redis is
// even contacted, with a message saying what to do.
func TestSecServeRefusesPublicListenWithoutToken(t *testing.T) {
	code, _, errs := runInProcess(t, nil, "serve", "--redis", "redis://127.0.0.1:1", "--listen", "0.0.0.0:0")
	if code != exitFail {
		t.Errorf("exit code %d, want %d", code, exitFail)
	}
	for _, want := range []string{"refusing to listen on 0.0.0.0:0 without an admin token", "LOCKWARDEN_ADMIN_TOKEN"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr %q lacks %q", errs, want)
		}
	}
	if strings.Contains(errs, "cannot reach Redis") {
		t.Error("Redis was contacted before the exposure check")
	}
}

func TestCmdRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:6379"},
		{"redis://:s3cret@h:1/0", "redis://:xxxxx@h:1/0"},
		{"rediss://alice:s3cret@h:1", "rediss://alice:xxxxx@h:1"},
		// net/url rejects this one (bad port), the fallback must still hide it.
		{"redis://bob:s3cret@h:notaport", "redis://bob:xxxxx@h:notaport"},
	}
	for _, tt := range tests {
		if got := redactURL(tt.in); got != tt.want {
			t.Errorf("redactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A Redis that cannot be reached is one line on stderr, a non-zero exit,
// and never the password.
func TestCmdServeUnreachableRedis(t *testing.T) {
	tests := []struct{ url, inMsg string }{
		{"redis://alice:s3cretpw@127.0.0.1:1/0", "cannot reach Redis at redis://alice:xxxxx@127.0.0.1:1/0: "},
		{"redis://alice:s3cretpw@127.0.0.1:notaport", "invalid Redis URL redis://alice:xxxxx@127.0.0.1:notaport: "},
		{"http://alice:s3cretpw@127.0.0.1:1", "invalid Redis URL http://alice:xxxxx@127.0.0.1:1: "},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			p := startProc(t, nil, "serve", "--redis", tt.url, "--listen", "127.0.0.1:0")
			if code := p.wait(15 * time.Second); code == 0 {
				t.Fatal("exit code 0, want non-zero")
			}
			errs := p.stderr.String()
			if strings.Contains(errs, "s3cretpw") {
				t.Errorf("stderr shows the password: %q", errs)
			}
			if n := strings.Count(strings.TrimRight(errs, "\n"), "\n"); n != 0 {
				t.Errorf("stderr has %d lines, want 1: %q", n+1, errs)
			}
			if !strings.HasPrefix(errs, "lockwarden: "+tt.inMsg) {
				t.Errorf("stderr %q does not start with %q", errs, "lockwarden: "+tt.inMsg)
			}
		})
	}
}

// The URL is taken from the environment when no flag is given; a wrong
// password is reported without showing it.
func TestCmdServeWrongPassword(t *testing.T) {
	rs := startWithPassword(t, "right-pw")
	p := startProc(t, []string{"LOCKWARDEN_REDIS_URL=redis://:wrong-pw@" + rs.Addr}, "serve", "--listen", "127.0.0.1:0")
	if code := p.wait(15 * time.Second); code == 0 {
		t.Fatal("exit code 0, want non-zero")
	}
	errs := p.stderr.String()
	if strings.Contains(errs, "wrong-pw") || strings.Contains(errs, "right-pw") {
		t.Errorf("stderr shows a password: %q", errs)
	}
	if want := "lockwarden: cannot reach Redis at redis://:xxxxx@" + rs.Addr; !strings.HasPrefix(errs, want) {
		t.Errorf("stderr %q does not start with %q", errs, want)
	}
}

func TestCmdServeHealthzAndSIGTERM(t *testing.T) {
	rs := startWithPassword(t, "pw")
	p := startProc(t, nil, "serve", "--redis", "redis://:pw@"+rs.Addr, "--listen", "127.0.0.1:0")
	base := listeningURL(t, p)

	body, status := httpGet(t, base+"/healthz")
	if status != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Fatalf("GET /healthz = %d %q, want 200 ok", status, body)
	}
	if _, status := httpGet(t, base+"/readyz"); status != http.StatusOK {
		t.Errorf("GET /readyz = %d, want 200", status)
	}

	// A live viewer is told the server is going away (1001).
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := ws.ReadMessage(); err != nil {
		t.Fatalf("no first frame: %v", err)
	}

	start := time.Now()
	p.signal(syscall.SIGTERM)
	var ce *websocket.CloseError
	for i := 0; i < 1000; i++ {
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, _, err = ws.ReadMessage(); err != nil {
			break
		}
	}
	if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Errorf("viewer saw %v after SIGTERM, want close 1001", err)
	}
	if code := p.wait(5 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("exit took %v after SIGTERM, want at most 5 s", d)
	}
	if err := dialOnce(strings.TrimPrefix(base, "http://")); err == nil {
		t.Error("console still accepts connections after exit")
	}
}

func TestCmdServeSIGINT(t *testing.T) {
	p := startProc(t, nil, "serve", "--redis", sharedRedis.URL(), "--listen", "127.0.0.1:0")
	listeningURL(t, p)
	p.signal(syscall.SIGINT)
	if code := p.wait(5 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGINT, want 0", code)
	}
}

// startWithPassword starts a private Redis that requires pw. The password
// is set after start because redisproc's readiness PING carries none.
func startWithPassword(t *testing.T, pw string) *redistest.Server {
	t.Helper()
	rs := redistest.StartT(t)
	c := redistest.NewClient(t, rs)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ConfigSet(ctx, "requirepass", pw).Err(); err != nil {
		t.Fatal(err)
	}
	return rs
}

// listeningURL waits for the "listening on" line and returns its URL.
func listeningURL(t *testing.T, p *proc) string {
	t.Helper()
	line := p.waitLine("lockwarden listening on ", 15*time.Second)
	u := strings.TrimPrefix(line, "lockwarden listening on ")
	if !strings.HasPrefix(u, "http://127.0.0.1:") {
		t.Fatalf("listening line %q: want an http://127.0.0.1:PORT URL", line)
	}
	return u
}

func httpGet(t *testing.T, url string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b), resp.StatusCode
}

func dialOnce(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err
}

func TestCmdServePortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	code, _, errs := runInProcess(t, nil, "serve", "--redis", sharedRedis.URL(), "--listen", taken)
	if code != exitFail {
		t.Fatalf("exit code %d, want %d", code, exitFail)
	}
	if want := "lockwarden: cannot listen on " + taken + ": the address is already in use"; !strings.Contains(errs, want) {
		t.Errorf("stderr %q does not contain %q", errs, want)
	}
}

// Token mode refuses a token an attacker could guess, or a viewer could
// recover offline, and says how to make one; 16 bytes are accepted.
func TestSecServeRefusesShortTokens(t *testing.T) {
	for _, args := range [][]string{
		{"--admin-token", "A"},
		{"--admin-token", "fifteen-bytes!!"},
		{"--admin-token", "an-admin-token-long-enough", "--viewer-token", "v"},
	} {
		var stderr strings.Builder
		_, err := parseServeFlags(args, func(string) string { return "" }, &stderr)
		if !errors.Is(err, errUsage) {
			t.Fatalf("%q: err = %v, want a usage error", args, err)
		}
		for _, want := range []string{"at least 16", "openssl rand -base64 32"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("%q: message %q does not say %q", args, stderr.String(), want)
			}
		}
	}
	if _, err := parseServeFlags([]string{"--admin-token", "sixteen-bytes-ok"}, func(string) string { return "" }, io.Discard); err != nil {
		t.Fatalf("a 16-byte token: %v", err)
	}
}
