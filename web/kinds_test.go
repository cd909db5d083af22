package web

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/static"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/views"
)

// Every kind is built here with the raw commands its own client sends, then
// listed, inspected and changed through the console; Redis is checked
// afterwards.

// kindsEnv is a console whose Inspector knows the test's token-lock and
// counter patterns (limit 3 per 10 s).
func kindsEnv(t *testing.T) *testEnv {
	t.Helper()
	return patternsEnv(t, func(p string) inspect.ObjectPatterns {
		return inspect.ObjectPatterns{TokenLocks: []string{p + "tok:*"},
			Counters: []inspect.CounterRule{{Pattern: p + "ip:*", Limit: 3, Window: 10 * time.Second}}}
	})
}

// patternsEnv is a console whose Inspector has the patterns made for the
// test's key prefix.
func patternsEnv(t *testing.T, patterns func(prefix string) inspect.ObjectPatterns) *testEnv {
	t.Helper()
	return newEnv(t, func(c *Config) {
		if err := c.Inspector.SetObjectPatterns(patterns(strings.TrimSuffix(c.Match, "*"))); err != nil {
			t.Fatal(err)
		}
	})
}

// makeRWLock writes a Redisson RReadWriteLock held for read by two
// threads, the first twice (two read levels, each with its lease key).
func (e *testEnv) makeRWLock(name string) (r1, r2 string) {
	e.t.Helper()
	ctx := context.Background()
	r1, r2 = holderID("1"), holderID("2")
	e.rdb.HSet(ctx, name, "mode", "read", r1, 2, r2, 1)
	for _, k := range rwLevelKeys(name, r1, 2) {
		e.rdb.Set(ctx, k, 1, time.Minute)
	}
	e.rdb.Set(ctx, rwLevelKeys(name, r2, 1)[0], 1, time.Minute)
	e.rdb.PExpire(ctx, name, time.Minute)
	e.t.Cleanup(func() {
		keys := append([]string{name}, rwLevelKeys(name, r1, 2)...)
		e.rdb.Del(context.Background(), append(keys, rwLevelKeys(name, r2, 1)...)...)
	})
	return r1, r2
}

// rwLevelKeys are a reader's lease keys as Redisson names them: its
// suffixName wraps the lock name in braces unless it already has some.
func rwLevelKeys(name, holder string, n int) []string {
	base := "{" + name + "}"
	if strings.Contains(name, "{") {
		base = name
	}
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, base+":"+holder+":rwlock_timeout:"+string(rune('0'+i)))
	}
	return out
}

// grant packs one sliding-window grant as Redisson 3.17.0 and later do: a length
// byte, a random id, the permits as a little-endian uint32.
func grant(id string, permits uint32) string {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], permits)
	return string([]byte{byte(len(id))}) + id + string(n[:])
}

// makeSlidingLimiter writes a Redisson sliding-window (3.13.3+) limiter of 10 per minute that
// granted 4 permits 100 ms ago.
func (e *testEnv) makeSlidingLimiter(name string) {
	e.t.Helper()
	ctx := context.Background()
	e.rdb.HSet(ctx, name, "rate", 10, "interval", 60000, "type", 0)
	now, err := e.rdb.Time(ctx).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	value, permits := "{"+name+"}:value", "{"+name+"}:permits"
	e.rdb.Set(ctx, value, 6, 0)
	e.rdb.ZAdd(ctx, permits, redis.Z{Score: float64(now.UnixMilli() - 100), Member: grant("abcdefghabcdefgh", 4)})
	e.t.Cleanup(func() { e.rdb.Del(context.Background(), name, value, permits, redistest.StatsKey(name)) })
}

func TestKindsConsoleRWLockRemovesOneHolder(t *testing.T) {
	e := kindsEnv(t)
	ctx := context.Background()
	name := e.prefix + "rw {doc}"
	r1, r2 := e.makeRWLock(name)

	var l lockJSON
	e.getJSON("/api/locks/"+esc(name), 200, &l)
	if l.Kind != inspect.KindRWLock || l.Mode != "read" || len(l.Holders) != 2 || l.Holders[0].ID != r1 ||
		l.Holders[0].Mode != "read" || l.Holders[0].Count != 2 || l.Holders[0].LeaseMS <= 0 || l.Channel != redistest.RWLockChannel(name) {
		t.Fatalf("rwlock = %+v", l)
	}
	if p := l.ForceUnlock[r1]; p.RemovesField != r1 || p.Channel != "" || !strings.Contains(p.Summary, "keep the lock") {
		t.Errorf("plan for %s = %+v", r1, p)
	}

	// The page lists both with their mode; the confirmation says the other
	// holder keeps the lock and nothing is published.
	st, _, b := e.do("GET", "/locks/"+esc(name), nil, nil)
	doc := parseHTML(t, b)
	if st != 200 || doc.Find(`[data-testid="lock-mode"]`).Text() != "read" || doc.Find(`[data-testid="holder-mode"]`).Length() != 2 {
		t.Fatalf("detail page %d: %s", st, b)
	}
	st, _, b = e.do("GET", "/locks/"+esc(name)+"/force-unlock?holder="+url.QueryEscape(r1), nil, nil)
	doc = parseHTML(t, b)
	if st != 200 || doc.Find(`[data-testid="confirm-removes-field"]`).Length() != 1 ||
		doc.Find(`[data-testid="confirm-no-publish"]`).Length() != 1 || doc.Find(`[data-testid="confirm-channel"]`).Length() != 0 ||
		!strings.Contains(doc.Find(`[data-testid="confirm-summary"]`).Text(), "keep the lock") {
		t.Fatalf("confirm page %d: %s", st, doc.Find(`[data-testid="force-unlock-confirm-page"]`).Text())
	}
	var deletes []string
	doc.Find(`[data-testid="confirm-delete"]`).Each(func(_ int, s *goquery.Selection) { deletes = append(deletes, s.Text()) })
	if !slices.Equal(deletes, rwLevelKeys(name, r1, 2)) {
		t.Errorf("confirm deletes %q, want the holder's level keys", deletes)
	}

	ps := e.rdb.PSubscribe(ctx, "*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	body, hdr := form("holder", r1, "reason", "reader stuck")
	st, h, _ := e.do("POST", "/locks/"+esc(name)+"/force-unlock", body, hdr)
	if st != 303 || !strings.Contains(h.Get("Location"), "flash=holder-removed") {
		t.Fatalf("POST: %d %v", st, h)
	}
	m := e.hgetall(name)
	if len(m) != 2 || m["mode"] != "read" || m[r2] != "1" {
		t.Fatalf("after removing %s the hash is %v; want mode and %s only", r1, m, r2)
	}
	if n := e.rdb.Exists(ctx, rwLevelKeys(name, r1, 2)...).Val(); n != 0 {
		t.Errorf("%d level keys of the removed holder remain", n)
	}
	if n := e.rdb.Exists(ctx, rwLevelKeys(name, r2, 1)...).Val(); n != 1 {
		t.Error("the other holder's level key went too")
	}
	select {
	case msg := <-ps.Channel():
		if strings.HasPrefix(msg.Channel, "redisson") {
			t.Errorf("published %q on %s although another holder keeps the lock", msg.Payload, msg.Channel)
		}
	case <-time.After(300 * time.Millisecond):
	}

	// The last holder: the hash goes and "0" is announced on the rwlock channel.
	e.sendJSON("POST", "/api/locks/"+esc(name)+"/force-unlock", `{"holder":"`+r2+`","reason":"last reader"}`, 200, nil)
	if e.rdb.Exists(ctx, name).Val() != 0 {
		t.Fatal("the last holder's force-unlock left the hash")
	}
	recs := e.changeRecords(bearer)
	if len(recs) < 2 || !strings.Contains(recs[1].After, "other holders keep") || !strings.Contains(recs[1].Before, "(read)") {
		t.Errorf("audit %+v", recs)
	}
}

func TestKindsConsoleFencedAndFairLocks(t *testing.T) {
	e := kindsEnv(t)
	ctx := context.Background()
	fenced := e.prefix + "fenced"
	e.makeLock(fenced, "t1", 1, time.Minute)
	e.rdb.Set(ctx, redistest.FencingTokenKey(fenced), 42, 0)
	t.Cleanup(func() { e.rdb.Del(context.Background(), fenced, redistest.FencingTokenKey(fenced)) })

	var l lockJSON
	e.getJSON("/api/locks/"+esc(fenced), 200, &l)
	if l.Kind != inspect.KindFencedLock || l.FencingToken == nil || *l.FencingToken != 42 ||
		!slices.Contains(l.ForceUnlock[holderID("t1")].Keeps, redistest.FencingTokenKey(fenced)) {
		t.Fatalf("fenced = %+v", l)
	}
	_, _, b := e.do("GET", "/locks/"+esc(fenced), nil, nil)
	if got := parseHTML(t, b).Find(`[data-testid="lock-fencing-token"]`).Text(); got != "42" {
		t.Errorf("page token %q", got)
	}
	e.sendJSON("POST", "/api/locks/"+esc(fenced)+"/force-unlock", `{"holder":"`+holderID("t1")+`","reason":"r"}`, 200, nil)
	if e.rdb.Exists(ctx, fenced).Val() != 0 || e.rdb.Get(ctx, redistest.FencingTokenKey(fenced)).Val() != "42" {
		t.Fatal("force-unlock of a fenced lock must delete the hash and keep the token")
	}

	// A fair lock with a stale waiter ahead of a live one: the page lists
	// both in order, and the force-unlock wakes only the live one.
	fair := e.prefix + "fair"
	e.makeLock(fair, "holder", 1, time.Minute)
	now := e.rdb.Time(ctx).Val().UnixMilli()
	stale, live := holderID("w-stale"), holderID("w-live")
	e.rdb.RPush(ctx, redistest.FairLockQueueKey(fair), stale, live)
	e.rdb.ZAdd(ctx, redistest.FairLockTimeoutKey(fair), redis.Z{Score: float64(now - 1000), Member: stale},
		redis.Z{Score: float64(now + 60000), Member: live})
	t.Cleanup(func() {
		e.rdb.Del(context.Background(), fair, redistest.FairLockQueueKey(fair), redistest.FairLockTimeoutKey(fair))
	})
	e.getJSON("/api/locks/"+esc(fair), 200, &l)
	if l.Kind != inspect.KindFairLock || l.WaitersTotal != 2 || len(l.Waiters) != 2 || l.Waiters[0].ID != stale ||
		l.Waiters[0].RemainingMS >= 0 || l.Waiters[1].RemainingMS <= 0 || l.Waiters[1].Channel != redistest.UnlockChannel(fair)+":"+live {
		t.Fatalf("fair = %+v", l)
	}
	_, _, b = e.do("GET", "/locks/"+esc(fair), nil, nil)
	doc := parseHTML(t, b)
	if doc.Find(`[data-testid="waiter-row"][data-stale="true"]`).Length() != 1 || doc.Find(`[data-testid="waiter-row"]`).Length() != 2 {
		t.Errorf("waiters table: %s", doc.Find(`[data-testid="waiters-table"]`).Text())
	}
	_, _, b = e.do("GET", "/locks/"+esc(fair)+"/force-unlock?holder="+url.QueryEscape(holderID("holder")), nil, nil)
	doc = parseHTML(t, b)
	if got := doc.Find(`[data-testid="confirm-channel"]`).Text(); got != redistest.UnlockChannel(fair)+":"+live {
		t.Errorf("confirm wakes %q", got)
	}
	ps := e.rdb.PSubscribe(ctx, "redisson_lock__channel:*")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	e.sendJSON("POST", "/api/locks/"+esc(fair)+"/force-unlock", `{"holder":"`+holderID("holder")+`","reason":"r"}`, 200, nil)
	select {
	case msg := <-ps.Channel():
		if msg.Channel != redistest.UnlockChannel(fair)+":"+live || msg.Payload != "0" {
			t.Errorf("published %q on %s", msg.Payload, msg.Channel)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the next waiter was not woken")
	}
	if q := e.rdb.LRange(ctx, redistest.FairLockQueueKey(fair), 0, -1).Val(); !slices.Equal(q, []string{live}) {
		t.Errorf("queue after force-unlock %v; want the stale waiter dropped", q)
	}
}

func TestKindsConsoleTokenLock(t *testing.T) {
	e := kindsEnv(t)
	ctx := context.Background()
	name := e.prefix + "tok:report"
	e.rdb.SetNX(ctx, name, "f00dfeed", time.Minute)
	e.rdb.Set(ctx, e.prefix+"cache:x", "f00dfeed", time.Minute) // a string, but no pattern names it
	t.Cleanup(func() { e.rdb.Del(context.Background(), name, e.prefix+"cache:x") })

	e.synced()
	var all struct{ Locks []lockJSON }
	e.getJSON("/api/locks", 200, &all)
	if len(all.Locks) != 1 || all.Locks[0].Kind != inspect.KindTokenLock || all.Locks[0].Holders[0].ID != "f00dfeed" ||
		all.Locks[0].Channel != "" || all.Locks[0].PTTLMS <= 0 {
		t.Fatalf("locks = %+v", all.Locks)
	}
	_, _, b := e.do("GET", "/locks/"+esc(name)+"/force-unlock?holder=f00dfeed", nil, nil)
	// lockwarden's token-lock waiters listen on redistest.TokenLockChannel.
	if got := parseHTML(t, b).Find(`[data-testid="confirm-channel"]`).Text(); got != redistest.TokenLockChannel(name) {
		t.Errorf("confirm page for a token lock publishes on %q, want %q", got, redistest.TokenLockChannel(name))
	}
	st, _, _ := e.do("POST", "/api/locks/"+esc(name)+"/force-unlock", strings.NewReader(`{"holder":"other","reason":"r"}`), bearer)
	if st != 409 || e.rdb.Get(ctx, name).Val() != "f00dfeed" {
		t.Fatalf("a wrong token: %d; the lock must stay", st)
	}
	e.sendJSON("POST", "/api/locks/"+esc(name)+"/force-unlock", `{"holder":"f00dfeed","reason":"r"}`, 200, nil)
	if e.rdb.Exists(ctx, name).Val() != 0 || e.rdb.Exists(ctx, e.prefix+"cache:x").Val() != 1 {
		t.Fatal("compare-and-delete did not delete exactly the lock")
	}
}

func TestKindsConsoleRedissonLimiterEdit(t *testing.T) {
	e := kindsEnv(t)
	ctx := context.Background()
	name := e.prefix + "sliding"
	e.makeSlidingLimiter(name)

	var l map[string]any
	e.getJSON("/api/limiters/"+esc(name), 200, &l)
	w, _ := l["window"].(map[string]any)
	if l["kind"] != string(inspect.KindRedissonLimiter) || l["algorithm"] != inspect.AlgorithmSlidingWindow ||
		l["rejections_hidden"] != true || l["grants"] != 4.0 || l["available"] != 6.0 || w["rejected"] != nil {
		t.Fatalf("limiter = %v", l)
	}

	st, _, b := e.do("GET", "/limiters/"+esc(name), nil, nil)
	doc := parseHTML(t, b)
	if st != 200 || !strings.Contains(doc.Find(`[data-testid="rejections-hidden"]`).Text(), "Rejections by Redisson clients are not visible") ||
		doc.Find(`[data-testid="limiter-detail"] [data-testid="rejected"]`).Length() != 0 ||
		doc.Find(`[data-testid="limiter-grants"]`).Text() != "4" {
		t.Fatalf("detail page %d: %s", st, doc.Find(`[data-testid="limiter-detail"]`).Text())
	}
	keepText := doc.Find(`[data-testid="keep-state-keep-text"]`).Text()
	if !strings.Contains(keepText, "Keeps the grants") || !strings.Contains(doc.Find(`[data-testid="keep-state-reset-text"]`).Text(), "Resets") {
		t.Errorf("choice texts %q / %q", keepText, doc.Find(`[data-testid="keep-state-reset-text"]`).Text())
	}
	// Without a choice nothing changes and the form asks for one.
	body, hdr := form("rate", "5", "interval_ms", "60000")
	st, _, b = e.do("POST", "/limiters/"+esc(name), body, hdr)
	if st != 400 || parseHTML(t, b).Find(`[data-testid="error-keep_state"]`).Length() != 1 || e.hgetall(name)["rate"] != "10" {
		t.Fatalf("POST without keep_state: %d", st)
	}
	body, hdr = form("rate", "5", "interval_ms", "60000", "keep_state", "keep", "reason", "test", "confirm", "yes")
	if st, _, _ = e.do("POST", "/limiters/"+esc(name), body, hdr); st != 303 {
		t.Fatalf("POST keep: %d", st)
	}
	value, permits := "{"+name+"}:value", "{"+name+"}:permits"
	if e.hgetall(name)["rate"] != "5" || e.rdb.Get(ctx, value).Val() != "1" || e.rdb.ZCard(ctx, permits).Val() != 1 {
		t.Fatalf("keep: config %v value %q grants %d; want rate 5, value 5-4, the grant kept",
			e.hgetall(name), e.rdb.Get(ctx, value).Val(), e.rdb.ZCard(ctx, permits).Val())
	}
	// The API resets by default, as Redisson's setRate does.
	e.sendJSON("PUT", "/api/limiters/"+esc(name), `{"rate":8,"interval_ms":1000,"reason":"test"}`, 200, nil)
	if e.rdb.Exists(ctx, value, permits).Val() != 0 || e.hgetall(name)["rate"] != "8" {
		t.Fatal("PUT without keep_state kept the state")
	}
	// keep_state true over the API keeps what was granted since.
	h := store.New(e.rdb, nil).NewRedissonLimiter(name, nil)
	if r, err := h.TryAcquire(ctx, 3); err != nil || !r.Allowed {
		t.Fatalf("acquire after the reset: %+v %v", r, err)
	}
	e.sendJSON("PUT", "/api/limiters/"+esc(name), `{"rate":8,"interval_ms":1000,"keep_state":true,"reason":"test"}`, 200, nil)
	if v := e.rdb.Get(ctx, value).Val(); v != "5" {
		t.Fatalf("PUT keep_state true: value %q, want 8-3", v)
	}
	e.sendJSON("PUT", "/api/limiters/"+esc(name), `{"rate":8,"interval_ms":1.5,"keep_state":true,"reason":"test"}`, 400, nil)
	recs := e.changeRecords(bearer)
	if len(recs) < 4 || recs[0].Outcome != inspect.OutcomeInvalid || recs[1].After != "rate=8 interval_ms=1000 (state kept)" ||
		recs[2].After != "rate=8 interval_ms=1000 (state reset)" || recs[3].After != "rate=5 interval_ms=60000 (state kept)" {
		t.Errorf("audit %+v", recs[:min(3, len(recs))])
	}

	// The wall never shows a rejected count or ratio for it.
	e.synced()
	_, _, b = e.do("GET", "/wall", nil, nil)
	tile := parseHTML(t, b).Find(`[data-testid="wall-tile"]`)
	if tile.Find(`[data-field="rejected"], [data-field="ratio"]`).Length() != 0 || tile.Find(`[data-testid="rejected-hidden"]`).Length() != 1 {
		t.Errorf("wall tile shows rejections: %s", tile.Text())
	}
}

func TestKindsConsoleCounterReset(t *testing.T) {
	e := kindsEnv(t)
	ctx := context.Background()
	ip := e.prefix + "ip:10.0.0.9"
	for i := 0; i < 5; i++ {
		if e.rdb.Incr(ctx, ip).Val() == 1 {
			e.rdb.Expire(ctx, ip, 10*time.Second)
		}
	}
	t.Cleanup(func() { e.rdb.Del(context.Background(), ip) })

	var l map[string]any
	e.getJSON("/api/limiters/"+esc(ip), 200, &l)
	if l["kind"] != string(inspect.KindCounter) || l["count"] != 5.0 || l["limit"] != 3.0 || l["limit_known"] != true ||
		l["grants"] != 3.0 || l["ttl_ms"].(float64) <= 0 {
		t.Fatalf("counter = %v", l)
	}
	e.sendJSON("PUT", "/api/limiters/"+esc(ip), `{"rate":8,"interval_ms":1000,"reason":"test"}`, 400, nil)

	st, _, b := e.do("GET", "/limiters/"+esc(ip), nil, nil)
	doc := parseHTML(t, b)
	if st != 200 || doc.Find(`[data-testid="limiter-form"]`).Length() != 0 || doc.Find(`[data-testid="counter-reset-form"]`).Length() != 1 ||
		doc.Find(`[data-testid="limiter-count"]`).Text() != "5" || doc.Find(`[data-testid="limiter-limit"]`).Text() != "3" {
		t.Fatalf("counter page %d: %s", st, doc.Find(`[data-testid="limiter-detail"]`).Text())
	}
	body, hdr := form()
	st, h, _ := e.do("POST", views.ResetCounterURL(ip), body, hdr)
	if st != 303 || !strings.Contains(h.Get("Location"), "flash=reset") || e.rdb.Exists(ctx, ip).Val() != 0 {
		t.Fatalf("reset form: %d %v", st, h)
	}
	e.sendJSON("POST", "/api/limiters/"+esc(ip)+"/reset", "", 404, nil)
	e.rdb.Set(ctx, e.prefix+"other", "4", 0)
	e.sendJSON("POST", "/api/limiters/"+esc(e.prefix+"other")+"/reset", "{}", 404, nil)
	if e.rdb.Exists(ctx, e.prefix+"other").Val() != 1 {
		t.Fatal("reset deleted a string no counter pattern names")
	}
	recs := e.changeRecords(bearer)
	var reset *inspect.AuditRecord
	for i := range recs {
		if recs[i].Action == "reset" && recs[i].Outcome == inspect.OutcomeOK {
			reset = &recs[i]
		}
	}
	if reset == nil || reset.Target != ip || !strings.HasPrefix(reset.Before, "count=5 ") {
		t.Errorf("audit of the reset: %+v", recs)
	}
}

func TestKindsConsoleStatsFrameAndFavicon(t *testing.T) {
	e := kindsEnv(t)
	ctx := context.Background()
	name := e.prefix + "rw"
	e.makeRWLock(name)
	lim := e.prefix + "sliding"
	e.makeSlidingLimiter(lim)
	tok := e.prefix + "tok:1"
	e.rdb.Set(ctx, tok, "abc", time.Minute)
	t.Cleanup(func() { e.rdb.Del(context.Background(), tok) })

	c, _, err := e.dialWS(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type limiterInfo struct {
		RejectionsHidden bool   `json:"rejections_hidden"`
		Grants           *int64 `json:"grants"`
		Rate             int64  `json:"rate"`
	}
	type statsFrame struct {
		Kinds        map[string]inspect.Kind `json:"kinds"`
		FirstSeen    map[string]int64        `json:"first_seen"`
		DiscoveredAt int64                   `json:"discovered_at"`
		LimiterInfo  map[string]limiterInfo  `json:"limiter_info"`
	}
	var got statsFrame
	readFrames(t, c, 10*time.Second, func(f frame) bool {
		if f.typ() != "stats" {
			return false
		}
		b, _ := json.Marshal(f)
		got = statsFrame{}
		_ = json.Unmarshal(b, &got)
		return len(got.Kinds) == 3
	})
	if got.Kinds[name] != inspect.KindRWLock || got.Kinds[lim] != inspect.KindRedissonLimiter || got.Kinds[tok] != inspect.KindTokenLock {
		t.Fatalf("frame kinds %v", got.Kinds)
	}
	if got.FirstSeen[name] <= 0 || got.DiscoveredAt <= 0 {
		t.Errorf("first_seen %v discovered_at %d", got.FirstSeen, got.DiscoveredAt)
	}
	if i := got.LimiterInfo[lim]; !i.RejectionsHidden || i.Grants == nil || *i.Grants != 4 || i.Rate != 10 {
		t.Errorf("limiter_info %+v", i)
	}

	st, h, b := e.do("GET", "/favicon.ico", nil, nil)
	if st != 200 || h.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(string(b), "<svg") {
		t.Errorf("favicon: %d %s", st, h.Get("Content-Type"))
	}
	if !slices.Equal(views.Scripts, static.Scripts) || !slices.Equal(views.VendorScripts, static.VendorScripts) || !slices.Equal(views.VendorStyles, static.VendorStyles) {
		t.Errorf("the layout loads %v %v %v; static has %v %v %v", views.VendorScripts, views.Scripts, views.VendorStyles,
			static.VendorScripts, static.Scripts, static.VendorStyles)
	}
}
