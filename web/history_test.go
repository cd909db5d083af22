package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/history"
)

// The history as the console serves it: fed by the console's own ticks,
// written to Redis by the replica holding the writer lock, read back by
// the API and the pages of any replica.

type apiPoint struct{ T, Acquired, Rejected, Errors int64 }

type apiLimiterHistory struct {
	StepS   int64                 `json:"step_s"`
	Points  []apiPoint            `json:"points"`
	Changes []inspect.AuditRecord `json:"changes"`
	Markers []struct {
		T             int64
		Label, Detail string
	} `json:"markers"`
	Summary string `json:"summary"`
	Kept    bool   `json:"kept"`
}

func (h apiLimiterHistory) totals() (acq, rej int64) {
	for _, p := range h.Points {
		acq += p.Acquired
		rej += p.Rejected
	}
	return acq, rej
}

// nonZero is the points that hold attempts: what a later read, which may
// end a few steps later, still shows the same.
func (h apiLimiterHistory) nonZero() []apiPoint {
	var out []apiPoint
	for _, p := range h.Points {
		if p.Acquired+p.Rejected+p.Errors > 0 {
			out = append(out, p)
		}
	}
	return out
}

// newHistoryEnv is newEnv without any history in Redis: a console that
// starts where another one wrote leaves that writer's count of the step
// and the minute it starts in (web/history's write.go, partly), and these
// tests count what their console saw from its first tick. It ticks twice
// per stats bucket: the history is handed one 1 s window per second, and
// a tick that comes a bucket late on a loaded machine loses the bucket it
// skipped (history.Recorder.Observe), which would fail the exact counts.
func newHistoryEnv(t *testing.T, mods ...func(*Config)) *testEnv {
	t.Helper()
	rdb := redistest.Universal(t)
	// One DEL: the keys share the {lw-history} tag.
	if err := rdb.Del(t.Context(), history.MetaKey, history.IndexKey, history.WriterLock).Err(); err != nil {
		t.Fatal(err)
	}
	return newEnv(t, func(c *Config) {
		c.TickInterval = inspect.BucketMS / 2 * time.Millisecond
		for _, mod := range mods {
			mod(c)
		}
	})
}

// flushHistory makes srv write what it has seen (becoming the writer if
// the lock is free) and waits until it is the writer: a console of an
// earlier test may still hold the lock until its lease runs out.
func flushHistory(t *testing.T, srv *Server) {
	t.Helper()
	h := srv.hist.History()
	if h == nil {
		t.Fatal("the console keeps no history")
	}
	eventually(t, history.DefaultLease+10*time.Second, "this console to write the history", func() bool {
		return h.Flush(t.Context()) == nil && h.Stats().Writer
	})
}

// limiterHistory flushes and reads name's history over span from e.
func (e *testEnv) limiterHistory(name, span string) apiLimiterHistory {
	e.t.Helper()
	flushHistory(e.t, e.srv)
	var out apiLimiterHistory
	e.getJSON("/api/limiters/"+esc(name)+"/history?span="+span, 200, &out)
	return out
}

// second starts another console over the same Redis and config as e's:
// another replica, or e's console after a restart.
func (e *testEnv) second() *Server {
	e.t.Helper()
	cfg := e.srv.cfg
	cfg.Inspector = inspect.New(e.srv.insp.Redis(), nil)
	srv := New(cfg)
	if err := srv.Open(e.t.Context()); err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	e.t.Cleanup(func() { _ = srv.Close() })
	eventually(e.t, 10*time.Second, "the second console's first snapshot", func() bool {
		sn := srv.live.Latest()
		return sn != nil && sn.RedisUp
	})
	return srv
}

// getFrom GETs path from srv and returns the body, which must be a 200,
// and the flush time it ends at (the History-Through header).
func (e *testEnv) getFrom(srv *Server, path string) ([]byte, string) {
	e.t.Helper()
	resp, err := e.http.Get(srv.URL() + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	if resp.StatusCode != 200 {
		e.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, buf.Bytes())
	}
	return buf.Bytes(), resp.Header.Get(historyThroughHeader)
}

// sameHistory GETs the history at path from e's console and from other,
// and fails the test when both answer at the same flush time with
// different bytes; false when they answer at different flush times (one
// has not seen the newest flush yet), else the answer.
func (e *testEnv) sameHistory(other *Server, path string) ([]byte, bool) {
	e.t.Helper()
	a, at := e.getFrom(e.srv, path)
	b, bt := e.getFrom(other, path)
	if at == "" || at != bt {
		return nil, false
	}
	if !bytes.Equal(a, b) {
		e.t.Fatalf("GET %s: the consoles differ at the same flush %s:\n%s\n%s", path, at, a, b)
	}
	return a, true
}

// trafficOnBucket makes a token bucket of capacity 5 refilling one permit
// a second, waits until the console samples it, and sends 8 attempts at
// once: 5 admitted, 3 rejected.
func (e *testEnv) trafficOnBucket(name string) {
	e.t.Helper()
	e.makeBucket(name, 5, "1000")
	e.synced()
	eventually(e.t, 10*time.Second, "the console to sample the bucket", func() bool {
		sn := e.srv.live.Latest()
		return sn != nil && sn.Stats[name].Bucket > 0
	})
	tb := e.app.NewTokenBucket(name, nil)
	for range 8 {
		if _, err := tb.TryAcquire(context.Background(), 1); err != nil {
			e.t.Fatal(err)
		}
	}
}

// waitTotals waits until name's 1 h history holds acq and rej.
func (e *testEnv) waitTotals(name string, acq, rej int64) apiLimiterHistory {
	e.t.Helper()
	var h apiLimiterHistory
	defer func() {
		if e.t.Failed() {
			a, r := h.totals()
			e.t.Logf("the history holds %d acquired, %d rejected (kept %v)", a, r, h.Kept)
		}
	}()
	eventually(e.t, 20*time.Second, "the attempts in the history", func() bool {
		h = e.limiterHistory(name, "1h")
		a, r := h.totals()
		return a == acq && r == rej
	})
	return h
}

func TestHistoryLimiterAPI(t *testing.T) {
	e := newHistoryEnv(t)
	name := e.prefix + "rl"
	e.trafficOnBucket(name)
	h := e.waitTotals(name, 5, 3)
	if h.StepS != 10 || len(h.Points) != 360 || !h.Kept || len(h.Changes) != 0 {
		t.Errorf("1h: step %d, %d points, kept %v, changes %v; want 10 s, 360, kept, none", h.StepS, len(h.Points), h.Kept, h.Changes)
	}
	for i := 1; i < len(h.Points); i++ {
		if h.Points[i].T != h.Points[i-1].T+10 {
			t.Fatalf("point %d at %d after %d: not consecutive steps", i, h.Points[i].T, h.Points[i-1].T)
		}
	}
	day := e.limiterHistory(name, "24h")
	if a, r := day.totals(); day.StepS != 60 || len(day.Points) != 1440 || a != 5 || r != 3 {
		t.Errorf("24h: step %d, %d points, %d/%d; want 60 s, 1440, 5 acquired 3 rejected", day.StepS, len(day.Points), a, r)
	}

	// An audited edit is a change of the span; a refused one is not.
	e.sendJSON("PUT", "/api/limiters/"+esc(name), `{"rate":7,"interval_ms":1000,"reason":"test"}`, 200, nil)
	e.sendJSON("PUT", "/api/limiters/"+esc(name), `{"rate":0,"interval_ms":1000,"reason":"test"}`, 400, nil)
	eventually(t, 20*time.Second, "the edit among the changes", func() bool {
		h = e.limiterHistory(name, "1h")
		return len(h.Changes) > 0
	})
	if c := h.Changes; len(c) != 1 || c[0].Action != "modify" || c[0].Target != name || !strings.Contains(c[0].After, "rate=7") {
		t.Errorf("changes = %+v, want the one modify to rate 7", c)
	}
	// The chart labels it with who changed what, and says so in words.
	if m := h.Markers; len(m) != 1 || m[0].T != h.Changes[0].Time.UnixMilli() || !strings.HasPrefix(m[0].Label, "admin: rate ") ||
		!strings.Contains(m[0].Label, " → 7") || !strings.Contains(m[0].Detail, "modify by admin") {
		t.Errorf("markers = %+v, want the edit labelled admin: rate … → 7", m)
	}
	if !strings.Contains(h.Summary, "5 acquired, 3 rejected") || !strings.Contains(h.Summary, "1 change: ") {
		t.Errorf("summary %q, want the totals and the change", h.Summary)
	}

	for _, tc := range []struct{ path, field string }{
		{"/api/limiters/" + esc(name) + "/history?span=2h", "span"},
		{"/api/locks/" + esc(name) + "/history?span=1d", "span"},
	} {
		var je jsonError
		e.getJSON(tc.path, 400, &je)
		if je.Field != tc.field {
			t.Errorf("GET %s: field %q, want %q (%s)", tc.path, je.Field, tc.field, je.Error)
		}
	}
	for _, p := range []string{
		"/api/limiters/" + esc(e.prefix+"nope") + "/history",
		"/api/locks/" + esc(e.prefix+"nope") + "/history",
		"/api/limiters/" + esc("elsewhere:rl") + "/history", // outside --match
	} {
		e.getJSON(p, 404, nil)
	}
}

func TestHistoryWhatIfAPI(t *testing.T) {
	e := newHistoryEnv(t)
	name := e.prefix + "rl"
	e.trafficOnBucket(name)
	e.waitTotals(name, 5, 3)
	path := "/api/limiters/" + esc(name) + "/what-if"

	var res struct {
		SpanS     float64 `json:"span_s"`
		FineS     float64 `json:"fine_s"`
		Attempts  int64   `json:"attempts"`
		Actual    struct{ Admitted, Rejected int64 }
		Predicted struct{ Admitted, Rejected, Low, High int64 }
		Check     *struct {
			Recorded, Replayed int64
			ErrorPct           float64 `json:"error_pct"`
		}
		Points   []json.RawMessage `json:"points"`
		LowerBnd bool              `json:"lower_bound"`
	}
	// A bucket of one permit a day admits the first attempt only. The
	// attempts are minutes old: their 200 ms buckets are replayed.
	e.sendJSON("POST", path, `{"rate":1,"interval_ms":86400000}`, 200, &res)
	if res.Attempts != 8 || res.Actual.Admitted != 5 || res.Actual.Rejected != 3 ||
		res.Predicted.Admitted != 1 || res.Predicted.Rejected != 7 || res.Predicted.Low > 7 || res.Predicted.High < 7 ||
		res.LowerBnd || len(res.Points) == 0 || res.SpanS <= 0 || res.FineS != res.SpanS {
		t.Errorf("what-if = %+v, want 8 attempts, 5/3 happened, 1/7 predicted in its band, all from buckets", res)
	}
	// At today's settings (5 permits a second) the replay gives the 3.
	if c := res.Check; c == nil || c.Recorded != 3 || c.Replayed != 3 || c.ErrorPct != 0 {
		t.Errorf("check = %+v, want 3 recorded, 3 replayed", c)
	}

	for _, tc := range []struct{ body, field string }{
		{`{"rate":0,"interval_ms":10}`, "rate"},
		{`{"rate":1.5,"interval_ms":10}`, "rate"},
		{`{"rate":5,"interval_ms":-1}`, "interval_ms"},
		{`{"interval_ms":10}`, "rate"},
		{`{"rate":5}`, "interval_ms"},
		{`{"rate":5,"interval_ms":10,"keep":1}`, "keep"},
	} {
		var je jsonError
		e.sendJSON("POST", path, tc.body, 400, &je)
		if je.Field != tc.field {
			t.Errorf("%s: field %q, want %q (%s)", tc.body, je.Field, tc.field, je.Error)
		}
	}
	if h := e.hgetall(name); h["max_permits"] != "5" || h["interval"] != "1000" {
		t.Errorf("what-ifs changed the bucket: %v", h)
	}
	e.sendJSON("POST", "/api/limiters/"+esc(e.prefix+"nope")+"/what-if", `{"rate":1,"interval_ms":10}`, 404, nil)
}

// A Redisson limiter's rejections are decided in its clients' scripts and
// not recorded: its what-if is a lower bound, and it refuses what the
// limiter would (an interval that is not whole milliseconds).
func TestHistoryWhatIfRedissonLowerBound(t *testing.T) {
	e := newHistoryEnv(t)
	name := e.prefix + "rrl"
	rl := e.app.NewRedissonLimiter(name, nil)
	if ok, err := rl.TrySetRate(t.Context(), store.RateOverall, 10, time.Second); err != nil || !ok {
		t.Fatalf("set rate: %v %v", ok, err)
	}
	t.Cleanup(func() { e.rdb.Del(context.Background(), name, redistest.StatsKey(name)) })
	e.synced()
	eventually(t, 10*time.Second, "the console to sample the limiter", func() bool {
		sn := e.srv.live.Latest()
		return sn != nil && sn.Stats[name].Bucket > 0
	})
	for range 3 {
		if r, err := rl.TryAcquire(t.Context(), 1); err != nil || !r.Allowed {
			t.Fatalf("acquire: %+v %v", r, err)
		}
	}
	e.waitTotals(name, 3, 0)
	path := "/api/limiters/" + esc(name) + "/what-if"
	var res struct {
		Attempts   int64 `json:"attempts"`
		LowerBound bool  `json:"lower_bound"`
	}
	e.sendJSON("POST", path, `{"rate":1,"interval_ms":1000}`, 200, &res)
	if res.Attempts != 3 || !res.LowerBound {
		t.Errorf("what-if = %+v, want 3 attempts, a lower bound", res)
	}
	var je jsonError
	e.sendJSON("POST", path, `{"rate":1,"interval_ms":1.5}`, 400, &je)
	if je.Field != "interval_ms" {
		t.Errorf("interval 1.5 ms: field %q (%s), want interval_ms", je.Field, je.Error)
	}
}

// A what-if changes nothing: a viewer may send it, and no trail records
// it; a browser on another site may not.
func TestHistoryWhatIfViewer(t *testing.T) {
	e := newEnv(t, withTokens)
	name := e.prefix + "rl"
	e.makeBucket(name, 5, "1000")
	path := "/api/limiters/" + esc(name) + "/what-if"
	body := `{"rate":3,"interval_ms":1000}`
	before, err := e.srv.admin.Recent(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}

	if st, _, b := e.do("POST", path, strings.NewReader(body), bearerOf(viewerTok)); st != 200 {
		t.Errorf("viewer what-if: %d %s, want 200", st, b)
	}
	if st, _, b := e.do("PUT", "/api/limiters/"+esc(name), strings.NewReader(body), bearerOf(viewerTok)); st != 403 {
		t.Errorf("viewer edit: %d %s, want 403", st, b)
	}
	if st, _, _ := e.do("POST", path, strings.NewReader(body), map[string]string{"Content-Type": "application/json"}); st != 401 {
		t.Errorf("anonymous what-if: %d, want 401", st)
	}
	cross := bearerOf(viewerTok)
	cross["Sec-Fetch-Site"] = "cross-site"
	if st, _, _ := e.do("POST", path, strings.NewReader(body), cross); st != 403 {
		t.Errorf("cross-site what-if: %d, want 403", st)
	}
	after, err := e.srv.admin.Recent(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range after[:len(after)-len(before)] {
		if strings.Contains(r.Action, "what-if") {
			t.Errorf("the change trail recorded a what-if: %+v", r)
		}
	}
	if h := e.hgetall(name); h["max_permits"] != "5" {
		t.Errorf("the bucket changed: %v", h)
	}
}

// Two consoles on one Redis answer the same history JSON, and a console
// started after the first one stopped reads the same past.
func TestHistorySharedAndRestart(t *testing.T) {
	e := newHistoryEnv(t)
	name, lock := e.prefix+"rl", e.prefix+"lock"
	e.makeLock(lock, "w1", 1, time.Minute)
	e.trafficOnBucket(name)
	h := e.waitTotals(name, 5, 3)
	var lh history.LockHistory
	eventually(t, 20*time.Second, "the running hold in the history", func() bool {
		flushHistory(t, e.srv)
		e.getJSON("/api/locks/"+esc(lock)+"/history", 200, &lh)
		return len(lh.Holds) == 1
	})
	if hd := lh.Holds[0]; hd.Holder != holderID("w1") || !hd.To.IsZero() || hd.Ended != "" {
		t.Errorf("hold = %+v, want w1's, running", hd)
	}

	// A replica: the same JSON from both, between two writes.
	other := e.second()
	for _, p := range []string{"/api/limiters/" + esc(name) + "/history?span=1h", "/api/limiters/" + esc(name) + "/history?span=24h",
		"/api/locks/" + esc(lock) + "/history"} {
		eventually(t, 20*time.Second, "the same answer from both consoles for "+p, func() bool {
			_, ok := e.sameHistory(other, p)
			return ok
		})
	}

	// The console breaks the lock: the hold ends force-unlocked.
	e.sendJSON("POST", "/api/locks/"+esc(lock)+"/force-unlock", `{"holder":"`+holderID("w1")+`","reason":"history test"}`, 200, nil)
	eventually(t, 20*time.Second, "the hold to end", func() bool {
		flushHistory(t, e.srv)
		e.getJSON("/api/locks/"+esc(lock)+"/history", 200, &lh)
		return len(lh.Holds) == 1 && lh.Holds[0].Ended != ""
	})
	if hd := lh.Holds[0]; hd.Ended != history.EndForceUnlocked || hd.To.IsZero() {
		t.Errorf("hold = %+v, want ended force-unlocked", hd)
	}
	// Its page, with nobody holding it, shows who did.
	code, _, b := e.do("GET", "/locks/"+esc(lock), nil, nil)
	if code != 200 || !bytes.Contains(b, []byte(`data-testid="lock-not-held"`)) || !bytes.Contains(b, []byte(`(force-unlocked).`)) {
		t.Errorf("GET /locks/%s after the force-unlock: %d, want the timeline of the ended hold", lock, code)
	}

	// Both stop; a console started afterwards reads the same past.
	before := h.nonZero()
	holds, _ := json.Marshal(lh.Holds)
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	e.srv = e.second()
	after := e.limiterHistory(name, "1h")
	if a, b := after.nonZero(), before; len(a) != len(b) || (len(a) > 0 && a[0] != b[0]) {
		t.Errorf("after the restart: %+v, before %+v", a, b)
	}
	var again history.LockHistory
	e.getJSON("/api/locks/"+esc(lock)+"/history", 200, &again)
	if got, _ := json.Marshal(again.Holds); !bytes.Equal(got, holds) {
		t.Errorf("holds after the restart: %s, before %s", got, holds)
	}

	var st struct {
		History *history.Stats `json:"history"`
	}
	e.getJSON("/api/status", 200, &st)
	if st.History == nil || !st.History.Writer || st.History.LimitersKept < 1 || st.History.LocksKept < 1 || st.History.BytesEstimate <= 0 {
		t.Errorf("/api/status history = %+v, want this console writing, the limiter and the lock kept", st.History)
	}
	if code, _, b := e.do("GET", "/status", nil, nil); code != http.StatusOK || !bytes.Contains(b, []byte(`data-testid="history-status"`)) {
		t.Errorf("/status: %d, no history section", code)
	}
}

// Pages: the chart with its change marker, the what-if form's answer, the
// lock's timeline; a bad span or rate is a 400 that names it.
func TestHistoryPages(t *testing.T) {
	e := newHistoryEnv(t)
	name := e.prefix + "rl"
	e.trafficOnBucket(name)
	e.waitTotals(name, 5, 3)
	page := "/limiters/" + esc(name)

	st, _, b := e.do("GET", page, nil, nil)
	if st != 200 || !bytes.Contains(b, []byte(`data-testid="history-chart"`)) || !bytes.Contains(b, []byte(`: 5 acquired, 3 rejected (37.5 %), 0 errors.`)) ||
		!bytes.Contains(b, []byte(`data-src="/api/limiters/`+esc(name)+`/history?span=1h"`)) {
		t.Errorf("GET %s: %d, want the chart drawn from the hour's history, its summary 5 acquired, 3 rejected", page, st)
	}
	st, _, b = e.do("GET", page+"?whatif=1&rate=1&interval_ms=86400000", nil, nil)
	if st != 200 || !bytes.Contains(b, []byte(`data-testid="whatif-rejected">7<`)) {
		t.Errorf("what-if form: %d, want 7 rejected predicted", st)
	}
	st, _, b = e.do("GET", page+"?whatif=1&rate=0&interval_ms=10", nil, nil)
	if st != 400 || !bytes.Contains(b, []byte(`data-testid="error-rate"`)) {
		t.Errorf("what-if with rate 0: %d, want 400 with the message under rate", st)
	}
	if st, _, _ = e.do("GET", page+"?span=7d", nil, nil); st != 400 {
		t.Errorf("span=7d: %d, want 400", st)
	}
}

// A change audited after the newest flushed step (made since the last
// flush) is among the limiter's changes at once; before, the changes ended
// where the newest step did, and an edit just past a step's end was missing
// until the next flush. The record is written a minute ahead, past any
// step the history could have flushed.
func TestHistoryChangeAfterNewestStepShows(t *testing.T) {
	e := newHistoryEnv(t)
	name := e.prefix + "rl"
	e.trafficOnBucket(name)
	e.waitTotals(name, 5, 3)
	ahead := time.Now().Add(time.Minute).UnixMilli()
	if err := e.rdb.XAdd(t.Context(), &redis.XAddArgs{Stream: e.srv.cfg.AuditKey, ID: fmt.Sprintf("%d-0", ahead),
		Values: []any{"action", admin.ActionModify, "target", name, "outcome", inspect.OutcomeOK, "role", "admin"}}).Err(); err != nil {
		t.Fatal(err)
	}
	e.srv.hcache.Changed()
	h := e.limiterHistory(name, "1h")
	if len(h.Changes) != 1 || h.Changes[0].Action != admin.ActionModify || h.Changes[0].Time.UnixMilli() != ahead {
		t.Fatalf("changes %+v, want the modify at %d", h.Changes, ahead)
	}
}
