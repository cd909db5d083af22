package web

import (
	"context"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

type apiLock struct {
	Name    string           `json:"name"`
	Kind    string           `json:"kind"`
	Holders []inspect.Holder `json:"holders"`
	PTTLMS  int64            `json:"pttl_ms"`
	Acked   *bool            `json:"acked"`
}

type apiLimiter struct {
	Name       string         `json:"name"`
	Kind       string         `json:"kind"`
	Rate       int64          `json:"rate"`
	IntervalMS float64        `json:"interval_ms"`
	PerSecond  float64        `json:"per_second"`
	Available  int64          `json:"available"`
	Window     inspect.Counts `json:"window"`
}

type apiErr struct {
	Error   string           `json:"error"`
	Field   string           `json:"field"`
	Holders []inspect.Holder `json:"holders"`
}

func TestAPILocksListAndFilter(t *testing.T) {
	e := newEnv(t, nil)
	e.makeLock(e.prefix+"orders:1", "worker-1", 2, time.Minute)
	e.makeLock(e.prefix+"orders:2", "worker-2", 1, time.Minute)
	e.makeLock(e.prefix+"users:7", "worker-3", 1, time.Minute)
	// An application hash that is not a lock must not be listed.
	e.rdb.HSet(context.Background(), e.prefix+"profile", "name", "x")

	e.synced()
	var all struct{ Locks []apiLock }
	e.getJSON("/api/locks", 200, &all)
	if len(all.Locks) != 3 {
		t.Fatalf("got %d locks, want 3: %+v", len(all.Locks), all.Locks)
	}
	l := all.Locks[0]
	if l.Name != e.prefix+"orders:1" || l.Kind != "reentrant" || len(l.Holders) != 1 ||
		l.Holders[0].ID != holderID("worker-1") || l.Holders[0].Count != 2 {
		t.Errorf("first lock = %+v", l)
	}
	if l.PTTLMS <= 0 || l.PTTLMS > 60000 {
		t.Errorf("pttl_ms = %d, want within (0, 60000]", l.PTTLMS)
	}

	var some struct{ Locks []apiLock }
	e.getJSON("/api/locks?match="+esc(e.prefix+"orders:*"), 200, &some)
	if len(some.Locks) != 2 {
		t.Fatalf("match orders:* gave %d locks, want 2", len(some.Locks))
	}
	// ?match narrows the configured pattern, never widens it.
	var none struct{ Locks []apiLock }
	e.getJSON("/api/locks?match=*", 200, &none)
	if len(none.Locks) != 3 {
		t.Errorf("match=* gave %d locks, want the 3 of this server's scope", len(none.Locks))
	}
	st, _, _ := e.do("GET", "/api/locks?match="+strings.Repeat("a", 2000), nil, nil)
	if st != 400 {
		t.Errorf("overlong match: status %d, want 400", st)
	}
}

func TestAPILockGetAndNotFound(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "job"
	e.makeLock(name, "w", 3, time.Minute)
	var l apiLock
	e.getJSON("/api/locks/"+esc(name), 200, &l)
	if l.Name != name || l.Holders[0].Count != 3 {
		t.Errorf("lock = %+v", l)
	}
	var er apiErr
	e.getJSON("/api/locks/"+esc(e.prefix+"nope"), 404, &er)
	if !strings.Contains(er.Error, "nope") {
		t.Errorf("404 error %q does not name the lock", er.Error)
	}
	// A key of another kind is not a lock either.
	e.rdb.Set(context.Background(), e.prefix+"str", "v", time.Minute)
	e.getJSON("/api/locks/"+esc(e.prefix+"str"), 404, nil)
}

func TestAPINamesRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	for _, n := range []string{"a/b", "{x}:y", "sp ace", "ключ", "%41", `q"uote<script>`, "a%2Fb", "x?y#z"} {
		name := e.prefix + n
		e.makeLock(name, "w", 1, time.Minute)
		var l apiLock
		e.getJSON("/api/locks/"+esc(name), 200, &l)
		if l.Name != name {
			t.Errorf("%q came back as %q", name, l.Name)
		}
		st, _, body := e.do("GET", "/locks/"+esc(name), nil, nil)
		if st != 200 {
			t.Errorf("lock page of %q: status %d", n, st)
		}
		if strings.Contains(string(body), "<script>") {
			t.Errorf("lock page of %q holds an unescaped <script>", n)
		}
		e.makeBucket(name+":rl", 5, "100")
		var lim apiLimiter
		e.getJSON("/api/limiters/"+esc(name+":rl"), 200, &lim)
		if lim.Name != name+":rl" {
			t.Errorf("limiter %q came back as %q", name+":rl", lim.Name)
		}
	}
	// "%41" must not be read as "A".
	e.makeLock(e.prefix+"A", "other", 9, time.Minute)
	var l apiLock
	e.getJSON("/api/locks/"+esc(e.prefix+"%41"), 200, &l)
	if l.Holders[0].Count != 1 {
		t.Errorf("%%41 was decoded twice: got the lock named A")
	}
}

func TestAPIForceUnlock(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	name := e.prefix + "stuck"
	e.makeLock(name, "w1", 4, time.Minute)
	path := "/api/locks/" + esc(name) + "/force-unlock"

	// Wrong holder: 409 naming the real one, nothing changed.
	var er apiErr
	e.sendJSON("POST", path, `{"holder":"`+holderID("w2")+`","reason":"stuck"}`, 409, &er)
	if len(er.Holders) != 1 || er.Holders[0].ID != holderID("w1") || er.Holders[0].Count != 4 {
		t.Errorf("409 holders = %+v", er.Holders)
	}
	if n, _ := e.rdb.Exists(ctx, name).Result(); n != 1 {
		t.Fatal("lock deleted after a 409")
	}
	e.sendJSON("POST", path, `{}`, 400, &er)
	if er.Field != "holder" {
		t.Errorf("missing holder: field %q", er.Field)
	}
	e.sendJSON("POST", path, `{"holder":`, 400, nil)
	// The reason is required and bounded; without one nothing changes.
	for _, body := range []string{`{"holder":"` + holderID("w1") + `"}`, `{"holder":"` + holderID("w1") + `","reason":"  "}`,
		`{"holder":"` + holderID("w1") + `","reason":"` + strings.Repeat("x", 501) + `"}`} {
		e.sendJSON("POST", path, body, 400, &er)
		if er.Field != "reason" {
			t.Errorf("%.60s: field %q, want reason", body, er.Field)
		}
	}
	if n, _ := e.rdb.Exists(ctx, name).Result(); n != 1 {
		t.Fatal("lock deleted without a reason")
	}

	var ok map[string]bool
	e.sendJSON("POST", path, `{"holder":"`+holderID("w1")+`","reason":"worker w1 is dead"}`, 200, &ok)
	if !ok["released"] {
		t.Errorf("reply = %v", ok)
	}
	if n, _ := e.rdb.Exists(ctx, name).Result(); n != 0 {
		t.Error("lock still exists after force-unlock")
	}
	e.sendJSON("POST", path, `{"holder":"`+holderID("w1")+`","reason":"again"}`, 404, nil)

	var evs struct{ Events []map[string]any }
	e.getJSON("/api/events", 200, &evs)
	found := false
	for _, ev := range evs.Events {
		if ev["type"] == "force-unlock" && ev["name"] == name && ev["holder"] == holderID("w1") {
			found = true
		}
	}
	if !found {
		t.Errorf("no force-unlock event in %v", evs.Events)
	}
}

func TestAPILimiters(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "rl:api"
	e.makeBucket(name, 500, "2")
	e.synced()
	var list struct{ Limiters []apiLimiter }
	e.getJSON("/api/limiters", 200, &list)
	if len(list.Limiters) != 1 {
		t.Fatalf("limiters = %+v", list.Limiters)
	}
	// Acquired once the console reads the limiter every tick: acquires made
	// before discovery found it (a Cluster's full pass can take over a
	// second on a loaded machine) could leave the 1 s window unseen.
	tb := e.app.NewTokenBucket(name, nil)
	for range 3 {
		if _, err := tb.TryAcquire(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
	}
	l := list.Limiters[0]
	if l.Name != name || l.Kind != "token-bucket" || l.Rate != 500 || l.IntervalMS != 2 || l.PerSecond != 500 {
		t.Errorf("limiter = %+v", l)
	}
	if l.Available < 490 || l.Available > 500 {
		t.Errorf("available = %d, want about 500", l.Available)
	}
	// The window sums complete buckets, so the acquires show within ~1.2 s.
	eventually(t, 5*time.Second, "3 acquires in the window", func() bool {
		var one apiLimiter
		e.getJSON("/api/limiters/"+esc(name), 200, &one)
		return one.Window.Acquired == 3
	})
	e.getJSON("/api/limiters/"+esc(e.prefix+"missing"), 404, nil)
}

func TestAPIModifyLimiter(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "rl:edit"
	e.makeBucket(name, 100, "10")
	path := "/api/limiters/" + esc(name)

	var l apiLimiter
	e.sendJSON("PUT", path, `{"rate":250,"interval_ms":4,"reason":"test"}`, 200, &l)
	if l.Rate != 250 || l.IntervalMS != 4 || l.PerSecond != 250 {
		t.Errorf("after PUT: %+v", l)
	}
	if h := e.hgetall(name); h["max_permits"] != "250" || h["interval"] != "4" {
		t.Errorf("hash after PUT: %v", h)
	}

	before := e.hgetall(name)
	bad := []struct{ body, field string }{
		{`{"rate":0,"interval_ms":4}`, "rate"},
		{`{"rate":-5,"interval_ms":4}`, "rate"},
		{`{"rate":1.5,"interval_ms":4}`, "rate"},
		{`{"rate":10,"interval_ms":-1}`, "interval_ms"},
		{`{"rate":10,"interval_ms":0}`, "interval_ms"},
		{`{"rate":"10","interval_ms":4}`, "rate"},
		{`{"rate":10}`, "interval_ms"},
		{`{"interval_ms":4}`, "rate"},
		{`{"rate":10,"interval_ms":4,"extra":1}`, "extra"},
		{`{"rate":1e400,"interval_ms":4}`, "rate"},
		{`{"rate":NaN,"interval_ms":4}`, ""},
		{`{"rate":10,"interval_ms":NaN}`, ""},
		{`{"rate":10,"interval_ms":"NaN"}`, "interval_ms"},
		{`not json`, ""},
		{``, ""},
		{`[1,2]`, ""},
		{`{"rate":10,"interval_ms":4} {}`, ""},
	}
	for _, b := range bad {
		var er apiErr
		e.sendJSON("PUT", path, b.body, 400, &er)
		if er.Error == "" {
			t.Errorf("%s: empty error message", b.body)
		}
		if b.field != "" && er.Field != b.field {
			t.Errorf("%s: field %q, want %q (error %q)", b.body, er.Field, b.field, er.Error)
		}
	}
	// Big enough to exceed 64 KiB, valid JSON otherwise.
	huge := `{"rate":10,"interval_ms":4,"pad":"` + strings.Repeat("x", 70<<10) + `"}`
	e.sendJSON("PUT", path, huge, 413, nil)
	if after := e.hgetall(name); !maps.Equal(before, after) {
		t.Errorf("rejected PUTs changed the bucket:\nbefore %v\nafter  %v", before, after)
	}

	// Without a reason, or past the kind's bounds: 400 saying so, nothing changed.
	for _, b := range []struct{ body, field, says string }{
		{`{"rate":10,"interval_ms":4}`, "reason", "reason is required"},
		{`{"rate":10,"interval_ms":4,"reason":"  "}`, "reason", "reason is required"},
		{`{"rate":1e12,"interval_ms":4,"reason":"typo"}`, "rate", "capacity (its largest burst) and must be from 1 to 1,000,000"},
		{`{"rate":10,"interval_ms":0.0001,"reason":"typo"}`, "interval_ms", "from 0.001 (1,000,000 a second) to 86,400,000 (one a day)"},
	} {
		var er apiErr
		e.sendJSON("PUT", path, b.body, 400, &er)
		if er.Field != b.field || !strings.Contains(er.Error, b.says) {
			t.Errorf("%s: %+v; want %s refused, saying %q", b.body, er, b.field, b.says)
		}
	}
	if after := e.hgetall(name); !maps.Equal(before, after) {
		t.Errorf("refused PUTs changed the bucket:\nbefore %v\nafter  %v", before, after)
	}
	recs, err := e.srv.admin.Recent(t.Context(), 50)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(recs, func(r inspect.AuditRecord) bool {
		return r.Action == "modify" && r.Outcome == inspect.OutcomeOK
	}); i < 0 || recs[i].Reason != "test" {
		t.Errorf("the audit trail's edit: %+v; want it with its reason", recs)
	}

	e.sendJSON("PUT", "/api/limiters/"+esc(e.prefix+"none"), `{"rate":10,"interval_ms":4,"reason":"test"}`, 404, nil)
	e.makeLock(e.prefix+"lock", "w", 1, time.Minute)
	e.sendJSON("PUT", "/api/limiters/"+esc(e.prefix+"lock"), `{"rate":10,"interval_ms":4,"reason":"test"}`, 404, nil)
	if h := e.hgetall(e.prefix + "lock"); len(h) != 1 {
		t.Errorf("PUT on a lock changed it: %v", h)
	}
}

func TestAPIHugeChunkedBody(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "rl"
	e.makeBucket(name, 100, "10")
	// No Content-Length: the limit must trip while reading.
	body := &slowReader{data: []byte(`{"rate":10,"interval_ms":4,"pad":"` + strings.Repeat("x", 100<<10) + `"}`)}
	req, _ := http.NewRequest("PUT", e.srv.URL()+"/api/limiters/"+esc(name), body)
	req.Header.Set("Authorization", "Bearer x")
	req.ContentLength = -1
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 413 {
		t.Errorf("status %d, want 413", resp.StatusCode)
	}
	if h := e.hgetall(name); h["max_permits"] != "100" {
		t.Errorf("bucket changed: %v", h)
	}
}

// slowReader hides its length so the client sends a chunked body.
type slowReader struct {
	data []byte
	off  int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.off >= len(r.data) {
		return 0, io.EOF
	}
	n := copy(p, r.data[r.off:min(len(r.data), r.off+4096)])
	r.off += n
	return n, nil
}

func TestAPIStatsAndEvents(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "rl:stats"
	e.makeBucket(name, 2, "100000")
	tb := e.app.NewTokenBucket(name, nil)
	for range 5 { // 2 admitted, 3 rejected
		_, _ = tb.TryAcquire(context.Background(), 1)
	}
	var stats struct {
		BucketMS int                       `json:"bucket_ms"`
		WindowMS int                       `json:"window_ms"`
		At       int64                     `json:"at"`
		Limiters map[string]inspect.Counts `json:"limiters"`
		Locks    map[string]inspect.Counts `json:"locks"`
	}
	eventually(t, 5*time.Second, "the limiter in /api/stats", func() bool {
		e.getJSON("/api/stats", 200, &stats)
		c := stats.Limiters[name]
		return c.Acquired == 2 && c.Rejected == 3
	})
	if stats.BucketMS != 200 || stats.WindowMS != 1000 || stats.At%200 != 0 {
		t.Errorf("stats header = %+v", stats)
	}
	if now := time.Now().UnixMilli(); stats.At < now-5000 || stats.At > now+5000 {
		t.Errorf("at = %d, not near now %d", stats.At, now)
	}
	if stats.Locks == nil {
		t.Error("locks is null, want an object")
	}
	var evs struct{ Events []any }
	e.getJSON("/api/events", 200, &evs)
	if evs.Events == nil {
		t.Error("events is null, want a list")
	}
}

func TestAPIUnknownRouteAndMethod(t *testing.T) {
	e := newEnv(t, nil)
	var er apiErr
	e.getJSON("/api/nothing", 404, &er)
	if er.Error == "" {
		t.Error("404 without a JSON error")
	}
	st, _, _ := e.do("DELETE", "/api/locks/x", nil, bearer)
	if st != 405 {
		t.Errorf("DELETE: status %d, want 405", st)
	}
}
