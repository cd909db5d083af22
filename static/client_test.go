package static_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a-h/templ"
	"github.com/gorilla/websocket"
	"github.com/playwright-community/playwright-go"

	chromium "github.com/lockwarden/lockwarden/e2e/browser"
	"github.com/lockwarden/lockwarden/static"
	"github.com/lockwarden/lockwarden/views"
)

// These tests run the static/*.js client in Chromium against rendered views and a scripted
// websocket, under a CSP without unsafe-inline. They need the playwright
// driver that `make deps` installs and /usr/bin/chromium, like e2e/.

const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'"

type fakeServer struct {
	*httptest.Server
	pages map[string]templ.Component
	conns chan *websocket.Conn
	mu    sync.Mutex
	api   map[string]any // JSON answers by path under /api/ (setAPI)
}

// setAPI makes GET path answer v as JSON.
func (fs *fakeServer) setAPI(path string, v any) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.api[path] = v
}

func newFakeServer(t *testing.T, pages map[string]templ.Component) *fakeServer {
	t.Helper()
	fs := &fakeServer{pages: pages, conns: make(chan *websocket.Conn, 8), api: map[string]any{}}
	up := websocket.Upgrader{}
	mux := http.NewServeMux()
	mux.Handle("/static/", http.StripPrefix("/static/", http.FileServerFS(static.FS)))
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		go func() {
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					c.Close()
					return
				}
			}
		}()
		fs.conns <- c
	})
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		fs.mu.Lock()
		v, ok := fs.api[r.URL.Path]
		fs.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	})
	mux.HandleFunc("/p/", func(w http.ResponseWriter, r *http.Request) {
		c, ok := fs.pages[strings.TrimPrefix(r.URL.Path, "/p/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		c.Render(r.Context(), w)
	})
	fs.Server = httptest.NewServer(mux)
	t.Cleanup(fs.Close)
	return fs
}

// conn waits for the page's websocket.
func (fs *fakeServer) conn(t *testing.T) *websocket.Conn {
	t.Helper()
	select {
	case c := <-fs.conns:
		// Not closed here: the page's own close ends it (the reader above
		// then closes it). Closing it first made the page reconnect while
		// the test wound down, and that stale connection was the next
		// subtest's "conn" (write frame: websocket: close sent).
		return c
	case <-time.After(15 * time.Second):
		t.Fatal("the page did not open a websocket")
		return nil
	}
}

func send(t *testing.T, c *websocket.Conn, frame map[string]any) {
	t.Helper()
	b, err := json.Marshal(frame)
	if err != nil {
		t.Fatal(err)
	}
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := c.WriteMessage(websocket.TextMessage, b); err != nil {
		t.Fatalf("write frame: %v", err)
	}
}

func stats(at int64, extra map[string]any) map[string]any {
	f := map[string]any{"type": "stats", "bucket_ms": 200, "window_ms": 1000, "at": at,
		"limiters": map[string]any{}, "locks": map[string]any{}, "available": map[string]any{},
		"pttl_ms": map[string]any{}, "holders": map[string]any{}, "lock_count": 0, "limiter_count": 0}
	for k, v := range extra {
		f[k] = v
	}
	return f
}

// One Chromium per test binary, started by the first test that opens a page.
var (
	browserOnce sync.Once
	browser     playwright.Browser
	stopBrowser = func() {}
	browserErr  error
)

func launch() (playwright.Browser, error) {
	browserOnce.Do(func() {
		var stop func()
		if browser, stop, browserErr = chromium.Launch(); browserErr == nil {
			stopBrowser = stop
		}
	})
	return browser, browserErr
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopBrowser()
	os.Exit(code)
}

type tab struct {
	playwright.Page
	t  *testing.T
	mu sync.Mutex
	// problems are page errors and CSP violations seen so far.
	problems []string
}

func open(t *testing.T, fs *fakeServer, path string) *tab {
	t.Helper()
	b, err := launch()
	if err != nil {
		if os.Getenv("LOCKWARDEN_REQUIRE_BROWSER") == "1" { // make test installed it: a miss is a failure
			t.Fatalf("browser unavailable: %v", err)
		}
		t.Skipf("browser unavailable (run make deps): %v", err)
	}
	ctx, err := b.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	p, err := ctx.NewPage()
	if err != nil {
		t.Fatal(err)
	}
	p.SetDefaultTimeout(10000)
	tb := &tab{Page: p, t: t}
	p.On("console", func(m playwright.ConsoleMessage) {
		if strings.Contains(m.Text(), "Content Security Policy") || m.Type() == "error" && !strings.Contains(m.Text(), "WebSocket") {
			tb.mu.Lock()
			tb.problems = append(tb.problems, m.Type()+": "+m.Text())
			tb.mu.Unlock()
		}
	})
	p.On("pageerror", func(err error) {
		tb.mu.Lock()
		tb.problems = append(tb.problems, "pageerror: "+err.Error())
		tb.mu.Unlock()
	})
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		for _, pr := range tb.problems {
			t.Errorf("browser: %s", pr)
		}
	})
	if _, err := p.Goto(fs.URL + path); err != nil {
		t.Fatal(err)
	}
	return tb
}

// until waits for a JS function to return true. It polls with Evaluate
// because Playwright's WaitForFunction needs eval, which the CSP forbids.
func (tb *tab) until(fn string, arg any) {
	tb.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := tb.Evaluate(fn, arg)
		if err != nil {
			tb.t.Fatalf("evaluate %s: %v", fn, err)
		}
		if v == true {
			return
		}
		if time.Now().After(deadline) {
			got, _ := tb.Evaluate(`() => document.body.outerHTML.slice(0, 4000)`)
			tb.t.Fatalf("timed out waiting for %s (%v)\npage: %v", fn, arg, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (tb *tab) eval(expr string, arg ...any) any {
	tb.t.Helper()
	v, err := tb.Evaluate(expr, arg...)
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (tb *tab) frames(n int) {
	tb.t.Helper()
	tb.until(`n => document.body.dataset.frames === String(n)`, n)
}

const (
	hostileLock    = `job:<img src=x onerror=alert(1)> "ключ"`
	hostileLimiter = `api/v1 <b>ключ</b>`
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func TestStaticClientLocksPage(t *testing.T) {
	page := views.Locks(views.LocksPage{Layout: views.Layout{Title: "Locks", Now: t0}, Match: "job:*",
		Locks: []views.LockRow{{Name: "job:a/b", Kind: "reentrant", PTTLMS: 30000, Holders: []views.HolderRow{{ID: "u:1", Count: 1}}, FirstSeen: t0}}})
	fs := newFakeServer(t, map[string]templ.Component{"locks": page})
	tb := open(t, fs, "/p/locks")
	c := fs.conn(t)
	tb.until(`() => document.body.dataset.ws === "open"`, nil)

	at := t0.UnixMilli()
	send(t, c, stats(at, map[string]any{
		"pttl_ms":    map[string]any{"job:a/b": 4000, hostileLock: -1, "other": 100},
		"holders":    map[string]any{"job:a/b": []any{map[string]any{"id": "u:1", "count": 2}}, hostileLock: []any{map[string]any{"id": "<i>h</i>:9", "count": 1}}},
		"lock_count": 3,
	}))
	tb.frames(1)
	rows := tb.eval(`() => [...document.querySelectorAll('[data-testid="lock-row"]')].map(r => [r.dataset.lock, r.querySelector('a').getAttribute('href'), r.querySelector('a').textContent, r.querySelector('[data-field="holders"]').textContent, r.querySelector('[data-field="pttl"]').textContent])`)
	want := [][]any{
		{hostileLock, "/locks/" + url.PathEscape(hostileLock), hostileLock, "<i>h</i>:9 ×1", "no expiry"},
		{"job:a/b", "/locks/job%3Aa%2Fb", "job:a/b", "u:1 ×2", ""},
	}
	got, _ := rows.([]any)
	if len(got) != 2 {
		t.Fatalf("rows %v", rows)
	}
	for i, w := range want {
		g := got[i].([]any)
		for j := 0; j < 4; j++ {
			if j == 1 {
				// encodeURIComponent and PathEscape differ on ':' but
				// must decode to the same name.
				u, err := url.PathUnescape(strings.TrimPrefix(g[1].(string), "/locks/"))
				if err != nil || u != w[0] {
					t.Errorf("row %d href %q", i, g[1])
				}
				continue
			}
			if g[j] != w[j] {
				t.Errorf("row %d col %d = %q, want %q", i, j, g[j], w[j])
			}
		}
	}
	if n := tb.eval(`() => document.querySelectorAll('img, i, script:not([src])').length`); fmt.Sprint(n) != "0" {
		t.Errorf("hostile text became markup: %v elements", n)
	}
	// The countdown runs between frames from 4.0 s.
	tb.until(`() => { const p = document.querySelector('[data-lock="job:a/b"] [data-field="pttl"]'); const v = parseFloat(p.textContent); return p.dataset.pttlMs === "4000" && v < 4.0 && v > 0 }`, nil)
	// The page is filtered (job:*): frames count every lock, so its count
	// stays the server's.
	if got := tb.eval(`() => document.querySelector('[data-testid="lock-count"]').textContent`); got != "1" {
		t.Errorf("lock count %v, want the filtered page's 1", got)
	}

	// A lock that is gone loses its row; the empty notice shows when none are left.
	send(t, c, stats(at+200, map[string]any{"pttl_ms": map[string]any{hostileLock: -1}, "lock_count": 1}))
	tb.frames(2)
	if got := tb.eval(`() => [...document.querySelectorAll('[data-testid="lock-row"]')].map(r => r.dataset.lock)`); fmt.Sprint(got) != fmt.Sprint([]any{hostileLock}) {
		t.Errorf("rows after removal %v", got)
	}
	if tb.eval(`() => document.querySelector('[data-locks-empty]').hidden`) != true {
		t.Errorf("empty notice shown beside a row")
	}
	send(t, c, stats(at+400, nil))
	tb.frames(3)
	tb.until(`() => !document.querySelector('[data-locks-empty]').hidden && !document.querySelector('[data-testid="lock-row"]')`, nil)

	// After the server goes away the page reconnects by itself.
	c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "restart"), time.Now().Add(time.Second))
	c.Close()
	tb.until(`() => document.body.dataset.ws === "closed"`, nil)
	c2 := fs.conn(t)
	tb.until(`() => document.body.dataset.ws === "open"`, nil)
	send(t, c2, stats(at+600, nil))
	tb.frames(4)
	if got := tb.eval(`() => document.querySelector('[data-testid="frame-counter"]').textContent`); got != "4" {
		t.Errorf("frame counter %v", got)
	}
}

func TestStaticClientLimiterDetail(t *testing.T) {
	page := views.LimiterDetail(views.LimiterDetailPage{Layout: views.Layout{Title: "L"},
		Limiter: views.LimiterRow{Name: hostileLimiter, Kind: "token-bucket", Rate: 500, IntervalMS: 2, PerSecond: 500, Spark: []views.Counts{{Acquired: 1}}},
		Rolling: []views.RollingRow{{At: t0, Acquired: 1}}})
	fs := newFakeServer(t, map[string]templ.Component{"l": page})
	tb := open(t, fs, "/p/l")
	c := fs.conn(t)

	frame := func(at int64, acq int) map[string]any {
		return stats(at, map[string]any{
			"limiters":      map[string]any{hostileLimiter: map[string]any{"acquired": acq, "rejected": 20, "errors": 1}, "other": map[string]any{"acquired": 999}},
			"available":     map[string]any{hostileLimiter: 42},
			"limiter_count": 2,
		})
	}
	at := t0.UnixMilli() + 200
	send(t, c, frame(at, 480))
	tb.frames(1)
	got := tb.eval(`() => { const d = document.querySelector('[data-testid="limiter-detail"]'); return ["acquired","rejected","errors","available"].map(f => d.querySelector('[data-field="' + f + '"]').textContent) }`)
	if fmt.Sprint(got) != "[480 20 1 42]" {
		t.Errorf("numbers %v", got)
	}
	rolling := `() => [...document.querySelectorAll('[data-rolling] tr')].map(r => r.dataset.at + "|" + [...r.cells].map(c => c.textContent).join("|"))`
	rows := tb.eval(rolling).([]any)
	if len(rows) != 2 || rows[0] != fmt.Sprintf("%d|12:00:00.200|480|20|1", at) {
		t.Errorf("rolling rows %v", rows)
	}
	// The same window twice is one row.
	send(t, c, frame(at, 480))
	tb.frames(2)
	if n := len(tb.eval(rolling).([]any)); n != 2 {
		t.Errorf("duplicate window added a row: %d", n)
	}
	// The sparkline takes one point per step, not per frame.
	spark := `() => document.querySelector('[data-spark]').dataset.acquired`
	send(t, c, frame(at+200, 5))
	tb.frames(3)
	if got := tb.eval(spark); got != "1" {
		t.Errorf("spark grew within a step: %v", got)
	}
	send(t, c, frame(at+1000, 7))
	tb.frames(4)
	if got := tb.eval(spark); got != "1,7" {
		t.Errorf("spark %v", got)
	}
	// Both series share one scale: the largest value (rejected 20) is the top.
	pts := tb.eval(`() => [...document.querySelectorAll('polyline[data-series]')].map(p => p.getAttribute('points'))`)
	if fmt.Sprint(pts) != "[118.0,27.6 120.0,19.2 118.0,29.0 120.0,1.0]" {
		t.Errorf("spark points %v", pts)
	}
	// The table stays bounded.
	for i := 0; i < views.RollingRows+10; i++ {
		send(t, c, frame(at+int64(2000+200*i), i))
	}
	tb.frames(4 + views.RollingRows + 10)
	rows = tb.eval(rolling).([]any)
	if len(rows) != views.RollingRows {
		t.Errorf("rolling rows %d, want cap %d", len(rows), views.RollingRows)
	}
	last := at + int64(2000+200*(views.RollingRows+9))
	if !strings.HasPrefix(rows[0].(string), fmt.Sprint(last)+"|") {
		t.Errorf("newest row not on top: %v", rows[0])
	}
}

func TestStaticClientWallAndEvents(t *testing.T) {
	wall := views.Wall(views.WallPage{Layout: views.Layout{Title: "Wall"},
		Limiters: []views.LimiterRow{{Name: hostileLimiter}, {Name: "quiet"}}, LockCount: 1})
	events := views.Events(views.EventsPage{Layout: views.Layout{Title: "Events"}})
	fs := newFakeServer(t, map[string]templ.Component{"wall": wall, "events": events})

	for _, path := range []string{"/p/wall", "/p/events"} {
		t.Run(path, func(t *testing.T) {
			tb := open(t, fs, path)
			c := fs.conn(t)
			tb.until(`() => document.body.dataset.ws === "open"`, nil)
			send(t, c, map[string]any{"type": "status", "redis": "down", "at": t0.UnixMilli()})
			tb.until(`() => document.querySelector('[data-testid="redis-status"]').dataset.state === "down"`, nil)
			tb.until(`() => !document.querySelector('[data-testid="redis-down"]').hidden`, nil)
			send(t, c, map[string]any{"type": "status", "redis": "up", "at": t0.UnixMilli()})
			tb.until(`() => document.querySelector('[data-testid="redis-down"]').hidden`, nil)
			send(t, c, map[string]any{"type": "unlock", "name": hostileLock, "channel": "redisson_lock__channel:{" + hostileLock + "}", "message": "0", "at": t0.UnixMilli()})
			send(t, c, map[string]any{"type": "force-unlock", "name": "a/b", "holder": "u:<1>", "at": t0.UnixMilli() + 5})
			tb.until(`() => document.querySelectorAll('[data-testid="event-row"]').length === 2`, nil)
			got := tb.eval(`() => [...document.querySelectorAll('[data-testid="event-row"]')].map(li => [li.dataset.eventType, li.querySelector('[data-testid="event-name"]').textContent, li.querySelector('a').getAttribute('href'), li.querySelector('[data-testid="event-detail"]').textContent])`).([]any)
			if fmt.Sprint(got[0]) != fmt.Sprint([]any{"force-unlock", "a/b", "/locks/a%2Fb", "broken by the console, holder u:<1>"}) {
				t.Errorf("newest event %v", got[0])
			}
			if g := got[1].([]any); g[1] != hostileLock || g[3] != `"0" on redisson_lock__channel:{`+hostileLock+`}` {
				t.Errorf("unlock event %v", g)
			}
			if n := tb.eval(`() => document.querySelectorAll('[data-testid="events-empty"], img, b').length`); fmt.Sprint(n) != "0" {
				t.Errorf("empty marker kept or markup injected")
			}
			if path != "/p/wall" {
				return
			}
			send(t, c, stats(t0.UnixMilli(), map[string]any{
				"limiters":   map[string]any{hostileLimiter: map[string]any{"acquired": 50, "rejected": 50, "errors": 0}},
				"available":  map[string]any{hostileLimiter: 0, "quiet": 7},
				"lock_count": 5,
			}))
			tb.frames(1)
			tiles := tb.eval(`() => [...document.querySelectorAll('[data-testid="wall-tile"]')].map(t => { const r = t.querySelector('[data-field="ratio"]'); return [t.dataset.limiter, t.querySelector('[data-field="acquired"]').textContent, r.textContent, r.className] })`).([]any)
			if fmt.Sprint(tiles[0]) != fmt.Sprint([]any{hostileLimiter, "50", "50.0%", "wall-big ratio ratio-bad"}) {
				t.Errorf("busy tile %v", tiles[0])
			}
			if fmt.Sprint(tiles[1]) != fmt.Sprint([]any{"quiet", "0", "–", "wall-big ratio ratio-idle"}) {
				t.Errorf("idle tile %v", tiles[1])
			}
			if got := tb.eval(`() => document.querySelector('[data-testid="lock-count"]').textContent`); got != "5" {
				t.Errorf("lock count %v", got)
			}
		})
	}
}

// The script adds rows only for names the page's MATCH pattern selects,
// with Redis's glob rules.
func TestStaticClientGlobFilter(t *testing.T) {
	names := []string{"abc", "axc", "xbc", "kby", "kdy", "lit*", "litx", "мой ключ"}
	cases := []struct {
		pattern string
		want    []string
	}{
		{"a?c", []string{"abc", "axc"}},
		{"[^x]*", []string{"abc", "axc", "kby", "kdy", "lit*", "litx", "мой ключ"}},
		{"k[a-c]y", []string{"kby"}},
		{`lit\*`, []string{"lit*"}},
		{"*ключ*", []string{"мой ключ"}},
		{"", names},
	}
	pages := map[string]templ.Component{}
	for i, c := range cases {
		pages[fmt.Sprint(i)] = views.Locks(views.LocksPage{Layout: views.Layout{Title: "Locks"}, Match: c.pattern})
	}
	fs := newFakeServer(t, pages)
	pttl := map[string]any{}
	for _, n := range names {
		pttl[n] = 1000
	}
	for i, c := range cases {
		t.Run(c.pattern, func(t *testing.T) {
			tb := open(t, fs, fmt.Sprintf("/p/%d", i))
			conn := fs.conn(t)
			send(t, conn, stats(t0.UnixMilli(), map[string]any{"pttl_ms": pttl}))
			tb.frames(1)
			got := tb.eval(`() => [...document.querySelectorAll('[data-testid="lock-row"]')].map(r => r.dataset.lock)`)
			// Rows are kept in name order.
			sorted := append([]string(nil), c.want...)
			sort.Strings(sorted)
			want := make([]any, len(sorted))
			for i, w := range sorted {
				want[i] = w
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("pattern %q: rows %v, want %v", c.pattern, got, want)
			}
		})
	}
}

// Rows added live carry the kind and first-seen time the frame gives;
// frames from a discovery older than the page do not undo its rows or
// counts; limiters discovered later get rows, Redisson ones without a
// rejected count.
func TestStaticClientKindsLive(t *testing.T) {
	locks := views.Locks(views.LocksPage{Layout: views.Layout{Title: "Locks", Now: t0},
		Locks: []views.LockRow{{Name: "a", Kind: "reentrant", PTTLMS: 30000, Holders: []views.HolderRow{{ID: "u:1", Count: 1}}, FirstSeen: t0}}})
	lims := views.Limiters(views.LimitersPage{Layout: views.Layout{Title: "Limiters", Now: t0},
		Limiters: []views.LimiterRow{{Name: "m", Kind: "token-bucket", Rate: 5, IntervalMS: 2, PerSecond: 500}}})
	fs := newFakeServer(t, map[string]templ.Component{"locks": locks, "limiters": lims})
	at := t0.UnixMilli()

	tb := open(t, fs, "/p/locks")
	c := fs.conn(t)
	rw := []any{map[string]any{"id": "u:2", "count": 2, "mode": "read"}}
	send(t, c, stats(at, map[string]any{
		"pttl_ms": map[string]any{"b": 5000}, "holders": map[string]any{"b": rw},
		"kinds": map[string]any{"b": "rwlock"}, "first_seen": map[string]any{"b": at - 90000},
		"lock_count": 1, "discovered_at": at - 1000,
	}))
	tb.frames(1)
	rows := `() => [...document.querySelectorAll('[data-testid="lock-row"]')].map(r => [r.dataset.lock, r.querySelector('[data-field="kind"]').textContent, r.querySelector('[data-field="holders"]').textContent, r.querySelector('[data-field="age-text"]').textContent].join("|"))`
	if got := fmt.Sprint(tb.eval(rows)); got != "[a|reentrant|u:1 ×1|0 ms b|rwlock|u:2 ×2 (read)|1 min 30 s]" {
		t.Errorf("rows after an older frame: %s", got)
	}
	if got := tb.eval(`() => document.querySelector('[data-testid="lock-count"]').textContent`); got != "1" {
		t.Errorf("an older frame set the count to %v", got)
	}
	send(t, c, stats(at+200, map[string]any{
		"pttl_ms": map[string]any{"b": 4800}, "holders": map[string]any{"b": rw}, "kinds": map[string]any{"b": "rwlock"},
		"lock_count": 1, "discovered_at": at + 100,
	}))
	tb.frames(2)
	if got := fmt.Sprint(tb.eval(`() => [...document.querySelectorAll('[data-testid="lock-row"]')].map(r => r.dataset.lock)`)); got != "[b]" {
		t.Errorf("rows after a fresh frame: %s", got)
	}

	tb = open(t, fs, "/p/limiters")
	c = fs.conn(t)
	info := func(grants int) map[string]any {
		return map[string]any{
			"m": map[string]any{"kind": "token-bucket", "rate": 5, "interval_ms": 2, "per_second": 500},
			"r": map[string]any{"kind": "redisson-rate-limiter", "rate": 10, "interval_ms": 1000, "per_second": 10, "rejections_hidden": true, "grants": grants},
		}
	}
	send(t, c, stats(at, map[string]any{
		"limiters":     map[string]any{"r": map[string]any{"acquired": 3, "rejected": 9, "errors": 0}},
		"available":    map[string]any{"m": 4, "r": 6},
		"limiter_info": info(4), "limiter_count": 2, "discovered_at": at + 100,
	}))
	tb.frames(1)
	row := `() => { const r = document.querySelector('tr[data-limiter="r"]'); return r && [r.querySelector('[data-field="kind"]').textContent, r.querySelector('[data-testid="limiter-available"]').textContent, r.querySelector('[data-testid="acquired"]').textContent, r.querySelector('[data-testid="rejected-hidden"]').textContent, r.querySelectorAll('[data-field="rejected"]').length, r.querySelector('a').getAttribute('href')].join("|") }`
	if got := tb.eval(row); got != "redisson-rate-limiter|6|3|4 granted · rejections not visible|0|/limiters/r" {
		t.Errorf("new limiter row %v", got)
	}
	send(t, c, stats(at+200, map[string]any{"available": map[string]any{"m": 4, "r": 5}, "limiter_info": info(5), "discovered_at": at + 100}))
	tb.frames(2)
	if got := tb.eval(`() => document.querySelector('tr[data-limiter="r"] [data-field="grants"]').textContent`); got != "5" {
		t.Errorf("grants not live: %v", got)
	}
	if got := fmt.Sprint(tb.eval(`() => [...document.querySelectorAll('[data-testid="limiter-row"]')].map(r => r.dataset.limiter)`)); got != "[m r]" {
		t.Errorf("limiter rows %s", got)
	}
}

// The server leaves kinds, first_seen, limiter_info and holders out of a
// stats frame when they did not change; the client keeps the last ones
// it got, so rows keep their kind and holders.
func TestStaticClientStatsWithoutMeta(t *testing.T) {
	locks := views.Locks(views.LocksPage{Layout: views.Layout{Title: "Locks", Now: t0}})
	fs := newFakeServer(t, map[string]templ.Component{"locks": locks})
	at := t0.UnixMilli()
	tb := open(t, fs, "/p/locks")
	c := fs.conn(t)
	rw := []any{map[string]any{"id": "u:2", "count": 2, "mode": "read"}}
	send(t, c, stats(at, map[string]any{
		"pttl_ms": map[string]any{"b": 5000}, "holders": map[string]any{"b": rw},
		"kinds": map[string]any{"b": "rwlock"}, "first_seen": map[string]any{"b": at - 90000},
		"limiter_info": map[string]any{}, "lock_count": 1, "discovered_at": at + 1,
	}))
	tb.frames(1)
	tb.eval(`() => { window.lockwarden.statsHandlers.push(function (f) { window.seenKinds = JSON.stringify(f.kinds) + JSON.stringify(f.holders); }); }`)
	core := stats(at+200, map[string]any{"pttl_ms": map[string]any{"b": 4800}, "lock_count": 1, "discovered_at": at + 1})
	delete(core, "holders")
	send(t, c, core)
	tb.frames(2)
	rows := `() => [...document.querySelectorAll('[data-testid="lock-row"]')].map(r => [r.dataset.lock, r.querySelector('[data-field="kind"]').textContent, r.querySelector('[data-field="holders"]').textContent].join("|"))`
	if got := fmt.Sprint(tb.eval(rows)); got != "[b|rwlock|u:2 ×2 (read)]" {
		t.Errorf("rows after a frame without meta: %s", got)
	}
	// Handlers get the frame with the kept parts filled in.
	if got := tb.eval(`() => window.seenKinds`); got != `{"b":"rwlock"}{"b":[{"count":2,"id":"u:2","mode":"read"}]}` {
		t.Errorf("a handler saw %v", got)
	}
}

// A holder younger than the skew between the browser's clock and Redis's
// reads "held 0 ms, renewed 0 ms ago", as the server renders it; it read just
// the identity before, so a lock that had changed hands live lost its hold
// time on /locks.
func TestStaticClientWhoTextOfAFreshHolder(t *testing.T) {
	fs := newFakeServer(t, map[string]templ.Component{"0": views.Locks(views.LocksPage{Layout: views.Layout{Title: "Locks"}})})
	tb := open(t, fs, "/p/0")
	got := tb.eval(`() => [window.lockwarden.whoText({who: "orders-api", held_since: 1000, renewed_at: 1000}, 900),
		window.lockwarden.whoText({who: "orders-api", held_since: 1000, renewed_at: 4000}, 64000)]`)
	want := "[orders-api, held 0 ms, renewed 0 ms ago orders-api, held 1 min 3 s, renewed 1 min ago]"
	if fmt.Sprint(got) != want {
		t.Errorf("whoText = %v, want %v", got, want)
	}
}

// A row goes stale live, and says "Cluster down" when its node refuses
// every key, as the server renders it: the frames carry cluster_down, not
// the reason text (which they leave out, as it would change every tick),
// and the browser looked for CLUSTERDOWN in that absent text.
func TestStaticClientStaleRowsLive(t *testing.T) {
	page := views.Locks(views.LocksPage{Layout: views.Layout{Title: "Locks", Now: t0},
		Locks: []views.LockRow{{Name: "a", Kind: "reentrant", PTTLMS: 30000, Holders: []views.HolderRow{{ID: "u:1", Count: 1}}, FirstSeen: t0},
			{Name: "b", Kind: "reentrant", PTTLMS: 30000, Holders: []views.HolderRow{{ID: "u:2", Count: 1}}, FirstSeen: t0}}})
	fs := newFakeServer(t, map[string]templ.Component{"locks": page})
	tb := open(t, fs, "/p/locks")
	c := fs.conn(t)
	tb.until(`() => document.body.dataset.ws === "open"`, nil)
	at := t0.UnixMilli()
	send(t, c, stats(at, map[string]any{"pttl_ms": map[string]any{"a": 1000, "b": 1000}, "stale": map[string]any{
		"a": map[string]any{"node": "10.0.0.1:7000", "last_read_ms": at},
		"b": map[string]any{"node": "10.0.0.2:7000", "last_read_ms": at, "cluster_down": true},
	}}))
	tb.frames(1)
	got := tb.eval(`() => [...document.querySelectorAll('[data-testid="stale"]')].map(e => e.textContent)`)
	want := "[(node 10.0.0.1:7000 down, last read 12:00:00.000 UTC) (Cluster down: node 10.0.0.2:7000 refuses every key (CLUSTERDOWN), last read 12:00:00.000 UTC)]"
	if fmt.Sprint(got) != want {
		t.Errorf("stale markers %v, want %v", got, want)
	}
	send(t, c, stats(at+200, map[string]any{"pttl_ms": map[string]any{"a": 800, "b": 800}, "stale": map[string]any{}}))
	tb.frames(2)
	if got := tb.eval(`() => document.querySelectorAll('[data-testid="stale"]').length`); fmt.Sprint(got) != "0" {
		t.Errorf("%v stale markers after the nodes answered, want 0", got)
	}
}
