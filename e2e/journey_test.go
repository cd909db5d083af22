package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/playwright-community/playwright-go"
	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// A journey is one person's path through the console: the real binary over
// a private redis-server, one browser tab, and the test playing the
// applications whose locks and limiters the console shows.
type journey struct {
	t     *testing.T
	ctx   context.Context
	redis *redistest.Server
	rdb   *redis.Client
	con   *console
	tab   *tab
	// written are the locks and limiters the journey wrote; lists wait
	// for the console's snapshot to show the ones that still exist.
	written map[string]string // name -> "locks" or "limiters"
}

func newJourney(t *testing.T) *journey {
	t.Helper()
	return newJourneyWith(t)
}

// newJourneyWith is newJourney with more `serve` flags.
func newJourneyWith(t *testing.T, flags ...string) *journey {
	t.Helper()
	srv, rdb := redisFor(t)
	j := &journey{t: t, ctx: ctxT(t), redis: srv, rdb: rdb}
	j.con = startConsole(t, srv.URL(), flags...)
	j.tab = openTab(t)
	j.allowFaviconIfMissing()
	return j
}

// allowFaviconIfMissing accepts the browser's favicon request failing, but
// only when the console really serves none: if a favicon is ever added and
// then breaks, the journeys catch it.
func (j *journey) allowFaviconIfMissing() {
	resp, err := http.Get(j.con.URL + "/favicon.ico")
	if err != nil {
		j.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		return
	}
	j.tab.log.allow("the console has no favicon (GET /favicon.ico is 404)", func(kind, text, u string) bool {
		return kind == "error" && strings.HasSuffix(u, "/favicon.ico") && strings.Contains(text, "404")
	})
}

// allowStatus accepts the browser's console report of one HTTP status on one
// path, for journeys that lead to an error page on purpose.
func (j *journey) allowStatus(path string, status int) {
	want := j.con.URL + path
	j.tab.log.allow(fmt.Sprintf("journey expects %d on %s", status, path), func(kind, text, u string) bool {
		return kind == "error" && u == want && strings.Contains(text, "status of "+strconv.Itoa(status))
	})
}

// ---- browser helpers ----

func (j *journey) open(path string) playwright.Response {
	j.t.Helper()
	if p, _, _ := strings.Cut(path, "?"); p == "/" || p == "/locks" || p == "/limiters" || p == "/wall" {
		j.listed()
	}
	resp, err := j.tab.Goto(j.con.URL + path)
	if err != nil {
		j.t.Fatalf("open %s: %v", path, err)
	}
	j.checkRedisShownUp()
	return resp
}

// listed waits until the console's lists (served from its sampler's
// snapshot, which discovers new keys within about a second) show every
// object the journey wrote that still exists.
func (j *journey) listed() {
	j.t.Helper()
	// Before the sampler's first snapshot the lists answer 503 ("still
	// discovering"), a page that does not reload itself: a journey that
	// wrote nothing through wrote must not meet it either.
	redistest.EventuallyWithin(j.t, 15*time.Second, "the console's first snapshot", func() bool {
		resp, err := http.Get(j.con.URL + "/api/locks?limit=1")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	want := map[string]map[string]bool{"locks": {}, "limiters": {}}
	for name, list := range j.written {
		if j.rdb.Exists(j.ctx, name).Val() == 1 {
			want[list][name] = true
		}
	}
	for list, names := range want {
		if len(names) == 0 {
			continue
		}
		redistest.EventuallyWithin(j.t, 15*time.Second, "the console lists the journey's "+list, func() bool {
			resp, err := http.Get(j.con.URL + "/api/" + list + "?limit=500")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			var body map[string]json.RawMessage
			if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&body) != nil {
				return false
			}
			var rows []struct{ Name string }
			if json.Unmarshal(body[list], &rows) != nil {
				return false
			}
			seen := 0
			for _, r := range rows {
				if names[r.Name] {
					seen++
				}
			}
			return seen == len(names)
		})
	}
}

// navigate runs action (a click) and waits for the page it leads to.
//
// It listens for the page's load event and for the main frame's document
// response (the last one, past redirects) before the action, rather than
// calling ExpectNavigation: playwright-go's ExpectNavigation, once the
// frame has navigated, looks at the frame's load states and only then
// starts listening for the next one (frameImpl.waitForLoadStateImpl), so a
// load that lands between the two is missed and the wait runs out on a
// page that has loaded (seen on a loaded machine: the POST answered and
// the new page drawn, then "Timeout 29805.00ms exceeded").
func (j *journey) navigate(what string, action func() error) playwright.Response {
	j.t.Helper()
	var resp playwright.Response
	document := func(r playwright.Response) bool {
		return r.Request().IsNavigationRequest() && r.Frame() == j.tab.MainFrame() &&
			(r.Status() < 300 || r.Status() >= 400)
	}
	_, err := j.tab.ExpectEvent("load", func() error {
		r, err := j.tab.ExpectEvent("response", action, playwright.PageExpectEventOptions{Predicate: document})
		resp, _ = r.(playwright.Response)
		return err
	})
	if err != nil {
		j.t.Fatalf("%s: %v", what, err)
	}
	return resp
}

func (j *journey) click(sel string) {
	j.t.Helper()
	if err := j.tab.Locator(sel).First().Click(); err != nil {
		j.t.Fatalf("click %s: %v", sel, err)
	}
}

func (j *journey) clickTo(sel string) playwright.Response {
	j.t.Helper()
	resp := j.navigate("click "+sel, func() error { return j.tab.Locator(sel).First().Click() })
	j.checkRedisShownUp()
	return resp
}

// checkRedisShownUp fails when a page claims Redis is down: every journey
// runs with Redis up, so the banner would be a false alarm.
func (j *journey) checkRedisShownUp() {
	j.t.Helper()
	if n := j.count(`[data-testid=redis-down]:visible`); n != 0 {
		j.t.Errorf("%s says Redis is not answering, but it is", j.tab.URL())
	}
}

// text is the trimmed text of the first element matching sel.
func (j *journey) text(sel string) string {
	j.t.Helper()
	s, err := j.tab.Locator(sel).First().TextContent()
	if err != nil {
		j.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// words is the text of the first element matching sel with runs of white
// space made one space, for cells whose markup breaks lines.
func (j *journey) words(sel string) string {
	j.t.Helper()
	return strings.Join(strings.Fields(j.rawText(sel)), " ")
}

// rawText is the exact text of the first element matching sel, for names
// whose spaces matter.
func (j *journey) rawText(sel string) string {
	j.t.Helper()
	s, err := j.tab.Locator(sel).First().TextContent()
	if err != nil {
		j.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

func (j *journey) count(sel string) int {
	j.t.Helper()
	n, err := j.tab.Locator(sel).Count()
	if err != nil {
		j.t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

func (j *journey) number(sel string) int64 {
	j.t.Helper()
	s := j.text(sel)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		j.t.Fatalf("%s shows %q, not a whole number", sel, s)
	}
	return n
}

func (j *journey) eval(expr string, arg any) any {
	j.t.Helper()
	v, err := j.tab.Evaluate(expr, arg)
	if err != nil {
		j.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (j *journey) evalString(expr string, arg any) string {
	j.t.Helper()
	s, _ := j.eval(expr, arg).(string)
	return s
}

// frames is how many stats frames app.js has handled on this page.
func (j *journey) frames() int {
	j.t.Helper()
	n, err := strconv.Atoi(j.evalString(`() => document.body.dataset.frames`, nil))
	if err != nil {
		j.t.Fatalf("body data-frames: %v", err)
	}
	return n
}

// waitLive waits until the page's websocket is open and min frames arrived.
func (j *journey) waitLive(min int) {
	j.t.Helper()
	j.waitJS(fmt.Sprintf("live updates (%d frames)", min),
		`min => document.body.dataset.ws === "open" && Number(document.body.dataset.frames) >= min`, min, 10*time.Second)
}

// waitJS waits until the predicate (a function source) holds in the page.
// It polls from Go: Playwright's own WaitForFunction evaluates strings in
// the page, which the console's CSP (no 'unsafe-eval') rightly forbids.
func (j *journey) waitJS(what, pred string, arg any, timeout time.Duration) {
	j.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		v, err := j.tab.Evaluate(pred, arg)
		if err == nil && v == true {
			return
		}
		if time.Now().After(deadline) {
			j.t.Fatalf("waiting for %s: last result %v, err %v", what, v, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitText waits until the text of sel satisfies ok, and returns it.
func (j *journey) waitText(what, sel string, timeout time.Duration, ok func(string) bool) string {
	j.t.Helper()
	var last string
	deadline := time.Now().Add(timeout)
	for {
		s, err := j.tab.Locator(sel).First().TextContent(playwright.LocatorTextContentOptions{Timeout: playwright.Float(2000)})
		last = strings.TrimSpace(s)
		if err == nil && ok(last) {
			return last
		}
		if time.Now().After(deadline) {
			j.t.Fatalf("waiting for %s (%s): last text %q, err %v", what, sel, last, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pathOf is the escaped path of the page now shown.
func (j *journey) pathOf() string {
	u, err := url.Parse(j.tab.URL())
	if err != nil {
		j.t.Fatal(err)
	}
	return u.EscapedPath()
}

// ---- Redis helpers ----

// redisNowMS is Redis's clock, the one scripts use.
func (j *journey) redisNowMS() int64 {
	j.t.Helper()
	tm, err := j.rdb.Time(j.ctx).Result()
	if err != nil {
		j.t.Fatal(err)
	}
	return tm.UnixMilli()
}

func (j *journey) hgetall(key string) map[string]string {
	j.t.Helper()
	m, err := j.rdb.HGetAll(j.ctx, key).Result()
	if err != nil {
		j.t.Fatalf("HGETALL %q: %v", key, err)
	}
	return m
}

// redissonFields is a lock hash as Redisson's scripts read it: without the
// "lw:" fields package store keeps beside the holder's (its hold record and
// queued mark, store/internal/wire's HoldFieldPrefix and QueuedField).
func (j *journey) redissonFields(key string) map[string]string {
	j.t.Helper()
	m := j.hgetall(key)
	for f := range m {
		if strings.HasPrefix(f, "lw:") {
			delete(m, f)
		}
	}
	return m
}

func (j *journey) pttl(key string) time.Duration {
	j.t.Helper()
	d, err := j.rdb.PTTL(j.ctx, key).Result()
	if err != nil {
		j.t.Fatalf("PTTL %q: %v", key, err)
	}
	return d
}

// redissonLock writes a lock the way Redisson's RLock does, without store:
// hash name, field "<uuid>:<thread>" = reentry count, PEXPIRE lease.
func (j *journey) redissonLock(name, holder string, count int64, lease time.Duration) {
	j.t.Helper()
	_, err := j.rdb.TxPipelined(j.ctx, func(p redis.Pipeliner) error {
		p.Del(j.ctx, name)
		p.HIncrBy(j.ctx, name, holder, count)
		j.wrote(name, "locks")
		p.PExpire(j.ctx, name, lease)
		return nil
	})
	if err != nil {
		j.t.Fatalf("write Redisson lock %q: %v", name, err)
	}
}

// windowOf reads name's current 1 s window straight from its stats ring.
func (j *journey) windowOf(name string) inspect.Counts {
	j.t.Helper()
	smp, err := inspect.New(j.rdb, nil).Sample(j.ctx, nil, []string{name})
	if err != nil {
		j.t.Fatalf("sample %q: %v", name, err)
	}
	return smp.Stats[name].Window
}

// apiJSON GETs a console API path and decodes it.
func (j *journey) apiJSON(path string, v any) {
	j.t.Helper()
	resp, err := http.Get(j.con.URL + path)
	if err != nil {
		j.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		j.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		j.t.Fatalf("GET %s: %v", path, err)
	}
}

// ---- traffic ----

// load is applications acquiring permits from one limiter through store,
// in a fixed number of goroutines, until stopped (at the latest when the
// test ends).
type load struct {
	cancel                      context.CancelFunc
	wg                          sync.WaitGroup
	once                        sync.Once
	acquired, rejected, errored atomic.Int64
}

// limiterLoad starts workers goroutines, each acquiring one permit from name
// every period.
func (j *journey) limiterLoad(name string, workers int, period time.Duration) *load {
	ctx, cancel := context.WithCancel(j.ctx)
	l := &load{cancel: cancel}
	app := store.New(j.rdb, nil)
	for range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			b := app.NewTokenBucket(name, nil)
			tk := time.NewTicker(period)
			defer tk.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
				}
				// Under the journey's ctx, not the load's: a call stop
				// meets on the wire still ends with its answer and is
				// counted, as Redis counts it (returning uncounted on
				// the load's cancellation left the console's chart one
				// attempt above these counts, and TestJourneyHistory
				// waited for them to agree until it timed out).
				res, err := b.TryAcquire(j.ctx, 1)
				switch {
				case err != nil:
					l.errored.Add(1)
				case res.Allowed:
					l.acquired.Add(1)
				default:
					l.rejected.Add(1)
				}
			}
		}()
	}
	j.t.Cleanup(l.stop)
	return l
}

// stop ends the load and waits for its goroutines.
func (l *load) stop() {
	l.once.Do(func() {
		l.cancel()
		l.wg.Wait()
	})
}

// bucket creates a token bucket (the ratelimit client's layout) through store, full at start.
func (j *journey) wrote(name, list string) {
	if j.written == nil {
		j.written = map[string]string{}
	}
	j.written[name] = list
}

func (j *journey) bucket(name string, capacity int64, intervalMS float64) {
	j.t.Helper()
	j.wrote(name, "limiters")
	err := store.New(j.rdb, nil).NewTokenBucket(name, nil).TrySetRate(j.ctx, store.TokenBucketConfig{
		Capacity: capacity, IntervalMS: intervalMS, Initial: capacity})
	if err != nil {
		j.t.Fatalf("init bucket %q: %v", name, err)
	}
}

// holdLock takes name through store as owner and keeps it (the watchdog
// renews it) until the test ends.
func (j *journey) holdLock(app *store.Client, name, owner string) *store.Lock {
	j.t.Helper()
	l := app.NewLock(name, &store.LockOptions{Owner: owner})
	if err := l.TryLock(j.ctx); err != nil {
		j.t.Fatalf("take %q: %v", name, err)
	}
	j.wrote(name, "locks")
	j.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(j.ctx), 2*time.Second)
		defer cancel()
		l.Unlock(ctx) // may already be gone; only the watchdog must stop
	})
	return l
}

// keyspaceWatch collects the keyspace notifications of one key: what Redis
// itself says was done to it, whoever did it.
type keyspaceWatch struct {
	ps *redis.PubSub
	ch <-chan *redis.Message
}

func (j *journey) watchKey(key string) *keyspaceWatch {
	j.t.Helper()
	// K: keyspace channel; g: generic (del, expire); h: hash commands.
	if err := j.rdb.ConfigSet(j.ctx, "notify-keyspace-events", "Kgh").Err(); err != nil {
		j.t.Fatal(err)
	}
	ps := j.rdb.Subscribe(j.ctx, "__keyspace@0__:"+key)
	if _, err := ps.Receive(j.ctx); err != nil {
		j.t.Fatal(err)
	}
	j.t.Cleanup(func() { ps.Close() })
	return &keyspaceWatch{ps: ps, ch: ps.Channel()}
}

// next returns the next operation on the key, "" when none came within d.
func (w *keyspaceWatch) next(d time.Duration) string {
	select {
	case m := <-w.ch:
		return m.Payload
	case <-time.After(d):
		return ""
	}
}

// drain returns every operation that arrives within d.
func (w *keyspaceWatch) drain(d time.Duration) []string {
	var ops []string
	for {
		op := w.next(d)
		if op == "" {
			return ops
		}
		ops = append(ops, op)
	}
}

// lockAttempts is name's attempts in the last second plus the newest bucket,
// as its stats ring in Redis records them.
func (j *journey) lockAttempts(name string) inspect.Counts {
	j.t.Helper()
	smp, err := inspect.New(j.rdb, nil).Sample(j.ctx, []string{name}, nil)
	if err != nil {
		j.t.Fatalf("sample %q: %v", name, err)
	}
	s := smp.Stats[name]
	return s.Window.Add(s.Newest)
}

// allTexts is the trimmed text of every element matching sel.
func (j *journey) allTexts(sel string) []string {
	j.t.Helper()
	all, err := j.tab.Locator(sel).AllTextContents()
	if err != nil {
		j.t.Fatalf("texts of %s: %v", sel, err)
	}
	for i := range all {
		all[i] = strings.TrimSpace(all[i])
	}
	return all
}

func (j *journey) fill(sel, value string) {
	j.t.Helper()
	if err := j.tab.Locator(sel).Fill(value); err != nil {
		j.t.Fatalf("fill %s: %v", sel, err)
	}
}

// served is the trimmed text of the first element matching sel in the HTML
// the server sent for resp, before any script ran.
func (j *journey) served(resp playwright.Response, sel string) string {
	j.t.Helper()
	body, err := resp.Body()
	if err != nil {
		j.t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		j.t.Fatal(err)
	}
	found := doc.Find(sel).First()
	if found.Length() == 0 {
		j.t.Fatalf("the page as served has no %s", sel)
	}
	return strings.TrimSpace(found.Text())
}

// The helpers below find rows by comparing data attributes with names in
// the page's own JavaScript, never by putting a name into a selector.

// servedLink is the link text of the row whose data-<attr> is name, in the
// HTML as the server sent it.
func (j *journey) servedLink(resp playwright.Response, rowID, attr, linkID, name string) string {
	j.t.Helper()
	body, err := resp.Body()
	if err != nil {
		j.t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(body))
	if err != nil {
		j.t.Fatal(err)
	}
	text, found := "", 0
	doc.Find(`[data-testid=` + rowID + `]`).Each(func(_ int, row *goquery.Selection) {
		if v, ok := row.Attr("data-" + attr); ok && v == name {
			found++
			text = row.Find(`[data-testid=` + linkID + `]`).Text()
		}
	})
	if found != 1 {
		j.t.Errorf("the served page has %d rows for %q, want 1", found, name)
	}
	return text
}

// liveLinkText is the link text of the row for name in the page now.
func (j *journey) liveLinkText(rowID, attr, linkID, name string) string {
	j.t.Helper()
	v := j.eval(`([rowID, attr, linkID, name]) => {
		const rows = [...document.querySelectorAll("[data-testid=" + rowID + "]")].filter(r => r.dataset[attr] === name);
		if (rows.length !== 1) return "found " + rows.length + " rows";
		const a = rows[0].querySelector("[data-testid=" + linkID + "]");
		return a ? a.textContent : "no link";
	}`, []any{rowID, attr, linkID, name})
	s, _ := v.(string)
	return s
}

// clickNamed clicks the link in the row for name and waits for its page.
func (j *journey) clickNamed(rowID, attr, linkID, name string) {
	j.t.Helper()
	ok := j.eval(`([rowID, attr, linkID, name]) => {
		document.querySelectorAll("[data-e2e-target]").forEach(e => e.removeAttribute("data-e2e-target"));
		const row = [...document.querySelectorAll("[data-testid=" + rowID + "]")].find(r => r.dataset[attr] === name);
		const a = row && row.querySelector("[data-testid=" + linkID + "]");
		if (!a) return false;
		a.setAttribute("data-e2e-target", "");
		return true;
	}`, []any{rowID, attr, linkID, name})
	if ok != true {
		j.t.Fatalf("no %s link for %q on %s", rowID, name, j.tab.URL())
	}
	j.clickTo(`[data-e2e-target]`)
}

// checkNoInjection fails when a name made it into the page as markup: every
// script is an external file under /static/ (the console has no inline
// script), and no name-borne element or handler exists.
func (j *journey) checkNoInjection() {
	j.t.Helper()
	got := j.eval(`() => ({
		foreignScripts: [...document.scripts].filter(s => !(s.getAttribute("src") || "").startsWith("/static/")).length,
		imgs: document.querySelectorAll("img").length,
		handlers: document.querySelectorAll("[onerror],[onload],[onclick]").length,
	})`, nil)
	m, _ := got.(map[string]any)
	if fmt.Sprint(m["foreignScripts"]) != "0" || fmt.Sprint(m["imgs"]) != "0" || fmt.Sprint(m["handlers"]) != "0" {
		j.t.Errorf("markup from a name got into %s: %v", j.tab.URL(), m)
	}
}
