package web

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/listing"
	"github.com/lockwarden/lockwarden/web/live"
)

// samplerMark marks the context the console's background work runs in, so
// a hook can tell its SCANs from those of a request.
type samplerMark struct{}

// scanCounter counts SCAN commands by whether they came from background
// work (the sampler) or from anything else (a request).
type scanCounter struct{ background, request atomic.Int64 }

func (h *scanCounter) count(ctx context.Context, cmds ...redis.Cmder) {
	for _, c := range cmds {
		if c.Name() != "scan" {
			continue
		}
		if ctx.Value(samplerMark{}) != nil {
			h.background.Add(1)
		} else {
			h.request.Add(1)
		}
	}
}

func (h *scanCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scanCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(ctx, cmd); return next(ctx, cmd) }
}
func (h *scanCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.count(ctx, cmds...); return next(ctx, cmds) }
}

// bigEnv is a console over a private Redis holding n Redisson locks, whose
// SCANs are counted by origin.
func bigEnv(t *testing.T, n int) (*testEnv, *scanCounter) {
	t.Helper()
	rs := redistest.StartT(t)
	rdb := redistest.NewClient(t, rs)
	prefix := redistest.Prefix(t)
	ctx := t.Context()
	pipe := rdb.Pipeline()
	for i := range n {
		name := fmt.Sprintf("%slock:%05d", prefix, i)
		pipe.HSet(ctx, name, holderID(fmt.Sprintf("w%d", i%7)), 1)
		// Leases 10 s apart: a deadline is known only to within how long
		// the sampler's pipeline takes to reach Redis (PTTLs run as the
		// commands arrive), which under -race on a busy machine is ~1 s.
		pipe.PExpire(ctx, name, time.Hour+time.Duration(i*37%n)*10*time.Second)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	scans := &scanCounter{}
	rdb.AddHook(scans)
	e := openMarked(t, rdb, prefix, nil)
	e.synced()
	return e, scans
}

// openMarked starts a console over the Redis behind rdb (a private
// server) that sees only prefix, its background work's context carrying
// samplerMark, so a hook on rdb can tell a request's commands from it.
func openMarked(t *testing.T, rdb *redis.Client, prefix string, mod func(*Config)) *testEnv {
	t.Helper()
	cfg := Config{Inspector: inspect.New(rdb, nil), Listen: "127.0.0.1:0", Match: prefix + "*",
		AuditKey: "lw:{audit}:" + prefix}
	if mod != nil {
		mod(&cfg)
	}
	srv := New(cfg)
	if err := srv.Open(context.WithValue(t.Context(), samplerMark{}, true)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	jar, _ := cookiejar.New(nil)
	return &testEnv{t: t, srv: srv, rdb: rdb, prefix: prefix, http: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type lockPageJSON struct {
	Locks      []apiLock `json:"locks"`
	Total      int       `json:"total"`
	NextCursor string    `json:"next_cursor"`
}

func TestListingLocksPagedSortedFiltered(t *testing.T) {
	const n = 2500
	e, scans := bigEnv(t, n)
	before := scans.request.Load()

	// The page: one page of rows, the total, and a next link that works
	// without JavaScript.
	st, _, b := e.do("GET", "/locks", nil, nil)
	doc := parseHTML(t, b)
	if rows := doc.Find(`[data-testid="lock-row"]`).Length(); st != 200 || rows != defaultPageSize {
		t.Fatalf("GET /locks: status %d, %d rows, want %d", st, rows, defaultPageSize)
	}
	if got := doc.Find(`[data-testid="lock-count"]`).Text(); got != fmt.Sprint(n) {
		t.Errorf("lock count %q, want %d", got, n)
	}
	if partial, _ := doc.Find(`tbody[data-locks]`).Attr("data-partial"); partial != "true" {
		t.Errorf("a partial page lets the script add rows: data-partial=%q", partial)
	}
	seen := map[string]int{}
	next, _ := doc.Find(`a[data-testid="pager-next"]`).Attr("href")
	doc.Find(`[data-testid="lock-row"]`).Each(func(_ int, s *goquerySel) { seen[s.AttrOr("data-lock", "")]++ })
	for pages := 1; next != ""; pages++ {
		if pages > n/defaultPageSize {
			t.Fatalf("more than %d pages", n/defaultPageSize)
		}
		st, _, b := e.do("GET", next, nil, nil)
		if st != 200 {
			t.Fatalf("GET %s: %d", next, st)
		}
		doc := parseHTML(t, b)
		doc.Find(`[data-testid="lock-row"]`).Each(func(_ int, s *goquerySel) { seen[s.AttrOr("data-lock", "")]++ })
		next, _ = doc.Find(`a[data-testid="pager-next"]`).Attr("href")
	}
	checkOnce(t, "HTML pages", seen, e.prefix, n)

	// The API, by every sort in both orders: each lock exactly once, in order.
	for _, sort := range listing.LockSorts {
		for _, order := range []string{"asc", "desc"} {
			var all []apiLock
			cursor := ""
			for {
				var p lockPageJSON
				e.getJSON("/api/locks?limit=300&sort="+sort+"&order="+order+"&cursor="+url.QueryEscape(cursor), 200, &p)
				if p.Total != n || len(p.Locks) > 300 {
					t.Fatalf("sort=%s: total %d, %d rows", sort, p.Total, len(p.Locks))
				}
				all = append(all, p.Locks...)

				if cursor = p.NextCursor; cursor == "" {
					break
				}
			}
			seen := map[string]int{}
			for _, l := range all {
				seen[l.Name]++
			}
			checkOnce(t, sort+" "+order, seen, e.prefix, n)
			names := make([]string, len(all))
			for i, l := range all {
				names[i] = l.Name
			}
			if want := wantOrder(e.prefix, n, sort, order == "desc"); !slices.Equal(names, want) {
				t.Errorf("sort=%s order=%s: rows out of order", sort, order)
			}
		}
	}

	// Filters.
	var p lockPageJSON
	e.getJSON("/api/locks?match="+url.QueryEscape(e.prefix+"lock:00[0-4]*"), 200, &p)
	if p.Total != 500 || len(p.Locks) != defaultPageSize || p.NextCursor == "" {
		t.Errorf("match: total %d, %d rows, next %q; want 500, %d, a cursor", p.Total, len(p.Locks), p.NextCursor, defaultPageSize)
	}
	e.getJSON("/api/locks?kind=fair", 200, &p)
	if p.Total != 0 || len(p.Locks) != 0 || p.NextCursor != "" {
		t.Errorf("kind=fair: %+v", p)
	}
	e.getJSON("/api/locks?kind=reentrant&limit=500", 200, &p)
	if p.Total != n || len(p.Locks) != 500 {
		t.Errorf("kind=reentrant: total %d, %d rows", p.Total, len(p.Locks))
	}
	st, _, b = e.do("GET", "/locks?kind=reentrant&sort=lease&order=desc&match="+url.QueryEscape(e.prefix+"lock:01*"), nil, nil)
	if rows := parseHTML(t, b).Find(`[data-testid="lock-row"]`).Length(); st != 200 || rows != defaultPageSize {
		t.Errorf("filtered, sorted page: %d, %d rows", st, rows)
	}

	// No page or list call scanned Redis; the sampler did, so the hook sees SCANs.
	for _, path := range []string{"/", "/limiters", "/wall", "/api/limiters"} {
		if st, _, b := e.do("GET", path, nil, nil); st != 200 {
			t.Errorf("GET %s: %d %.200s", path, st, b)
		}
	}
	if d := scans.request.Load() - before; d != 0 {
		t.Errorf("page loads issued %d SCANs, want 0", d)
	}
	if scans.background.Load() == 0 {
		t.Error("the hook saw no SCAN from the sampler either; it counts nothing")
	}
}

// goquerySel keeps the Each callbacks short.
type goquerySel = goquery.Selection

// checkOnce reports names seen other than once among the n locks.
func checkOnce(t *testing.T, what string, seen map[string]int, prefix string, n int) {
	t.Helper()
	if len(seen) != n {
		t.Errorf("%s: %d distinct locks, want %d", what, len(seen), n)
	}
	for i := range n {
		if name := fmt.Sprintf("%slock:%05d", prefix, i); seen[name] != 1 {
			t.Errorf("%s: %s listed %d times, want once", what, name, seen[name])
			return
		}
	}
}

// wantOrder is the names of bigEnv's n locks as ?sort= orders them: a
// lease is its deadline (creation plus the lease bigEnv gave it), every
// lock was first seen by the same discovery, and ties go by name.
func wantOrder(prefix string, n int, sort string, desc bool) []string {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		c := 0
		switch sort {
		case listing.SortHolder:
			c = strings.Compare(holderID(fmt.Sprintf("w%d", a%7)), holderID(fmt.Sprintf("w%d", b%7)))
		case listing.SortLease:
			c = cmp.Compare(a*37%n, b*37%n)
		}
		if c == 0 {
			c = cmp.Compare(a, b)
		}
		if desc {
			c = -c
		}
		return c
	})
	out := make([]string, n)
	for i, j := range idx {
		out[i] = fmt.Sprintf("%slock:%05d", prefix, j)
	}
	return out
}

func TestListingBadParameters(t *testing.T) {
	e := newEnv(t, nil)
	for _, tc := range []struct{ query, field string }{
		{"limit=0", "limit"}, {"limit=501", "limit"}, {"limit=ten", "limit"},
		{"sort=size", "sort"}, {"order=up", "order"}, {"kind=mutex", "kind"},
		{"kind=token-bucket", "kind"}, {"cursor=%21%21", "cursor"}, {"cursor=e30", "cursor"},
		{"match=" + strings.Repeat("a", inspect.MaxGlobLen+1), "match"},
	} {
		var body struct{ Error, Field string }
		e.getJSON("/api/locks?"+tc.query, 400, &body)
		if body.Field != tc.field || !strings.Contains(body.Error, tc.field) {
			t.Errorf("/api/locks?%.40s: field %q error %q, want %q named", tc.query, body.Field, body.Error, tc.field)
		}
		if st, _, b := e.do("GET", "/locks?"+tc.query, nil, nil); st != 400 || !strings.Contains(string(b), tc.field) {
			t.Errorf("/locks?%.40s: status %d", tc.query, st)
		}
	}
	var body struct{ Error, Field string }
	e.getJSON("/api/limiters?sort=lease", 400, &body)
	if body.Field != "sort" {
		t.Errorf("limiters sort=lease: %+v", body)
	}
}

// TestWallTopLimiters: the wall's tiles are the alerting limiters (worst
// first) and then the busiest; the rest are summed in one line.
func TestWallTopLimiters(t *testing.T) {
	sn := &live.Snapshot{Stats: map[string]inspect.Summary{}}
	for i := range 30 {
		name := fmt.Sprintf("l%02d", i)
		sn.Limiters = append(sn.Limiters, inspect.LimiterInfo{Name: name, Kind: inspect.KindTokenBucket})
		sn.Stats[name] = inspect.Summary{Window: inspect.Counts{Acquired: int64(100 + i)}}
	}
	// l00 rejects 50 % (bad), l01 10 % (warn), l02 hides rejections.
	sn.Stats["l00"] = inspect.Summary{Window: inspect.Counts{Acquired: 1, Rejected: 1}}
	sn.Stats["l01"] = inspect.Summary{Window: inspect.Counts{Acquired: 9, Rejected: 1}}
	sn.Limiters[2].RejectionsHidden = true
	sn.Stats["l02"] = inspect.Summary{Window: inspect.Counts{Acquired: 1, Rejected: 100}}
	top := topLimiters(sn, wallTiles)
	if len(top) != wallTiles {
		t.Fatalf("%d tiles, want %d", len(top), wallTiles)
	}
	want := []string{"l00", "l01", "l29", "l28"}
	for i, w := range want {
		if top[i].Name != w {
			t.Errorf("tile %d is %s, want %s", i, top[i].Name, w)
		}
	}
	if slices.ContainsFunc(top, func(l inspect.LimiterInfo) bool { return l.Name == "l02" }) {
		t.Error("a limiter with hidden rejections and little traffic got a tile")
	}
}

func TestWallPageBounded(t *testing.T) {
	e := newEnv(t, nil)
	for i := range wallTiles + 6 {
		e.makeBucket(fmt.Sprintf("%srl:%02d", e.prefix, i), 10, "100")
	}
	e.synced()
	st, _, b := e.do("GET", "/wall", nil, nil)
	doc := parseHTML(t, b)
	if n := doc.Find(`[data-testid="wall-tile"]`).Length(); st != 200 || n != wallTiles {
		t.Errorf("wall: %d, %d tiles, want %d", st, n, wallTiles)
	}
	if rest := doc.Find(`[data-testid="wall-rest"]`).Text(); !strings.Contains(rest, "6 more limiters") {
		t.Errorf("wall summary %q, want 6 more limiters", rest)
	}
}

// Every kind the lists show can be filtered on: the ?kind= values come
// from the kinds store/inspect defines, so a deadline lock, listed like
// any lock, is also what ?kind=deadline-lock selects.
func TestListKindFilterAcceptsEveryListedKind(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		pattern := strings.TrimSuffix(c.Match, "*") + "dl:*"
		c.Inspector = inspect.New(c.Inspector.Redis(), &inspect.Options{Patterns: inspect.ObjectPatterns{DeadlineLocks: []string{pattern}}})
	})
	name := e.prefix + "dl:nightly"
	deadline := time.Now().Add(time.Hour).UnixMilli()
	if err := e.rdb.Set(t.Context(), name, deadline, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	e.makeLock(e.prefix+"plain", "w1", 1, time.Minute)
	e.synced()
	var p struct {
		Locks []apiLock
		Total int
	}
	e.getJSON("/api/locks?kind=deadline-lock", 200, &p)
	if p.Total != 1 || len(p.Locks) != 1 || p.Locks[0].Name != name || p.Locks[0].Kind != "deadline-lock" {
		t.Errorf("kind=deadline-lock: %+v", p)
	}
	st, _, b := e.do("GET", "/locks", nil, nil)
	if st != 200 || parseHTML(t, b).Find(`[data-testid="kind-select"] option[value="deadline-lock"]`).Length() != 1 {
		t.Errorf("the locks page offers no deadline-lock filter (%d)", st)
	}
}
