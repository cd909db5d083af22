package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// newClusterEnv starts a console over a Cluster the way serve does it (a
// ClusterClient, so discovery, sampling, events and node health are per
// master). The env's rdb runs the helpers' commands through the Cluster.
func newClusterEnv(t *testing.T, c *redistest.Cluster, mod func(*Config)) *testEnv {
	t.Helper()
	cc := redistest.NewClusterClient(t, c)
	rdb := redistest.NewClusterBackedClient(t, c, cc)
	prefix := redistest.Prefix(t)
	cfg := Config{
		Inspector: inspect.New(cc, nil),
		Listen:    "127.0.0.1:0",
		Match:     prefix + "*",
		AuditKey:  "lw:{audit}:" + prefix,
		// Its own sign-in state, as newEnvOn gives (one slot: the
		// namespace is the hash tag).
		AuthNamespace: strings.TrimSuffix(prefix, ":"),
	}
	if mod != nil {
		mod(&cfg)
	}
	srv := New(cfg)
	if err := srv.Open(t.Context()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	// Pages answer 503 until the first tick, which on a Cluster (a
	// discovery per master) can take longer than a test's first request.
	eventually(t, 10*time.Second, "the first sampler tick", func() bool {
		sn := srv.live.Latest()
		return sn != nil && sn.RedisUp
	})
	jar, _ := cookiejar.New(nil)
	return &testEnv{t: t, srv: srv, rdb: rdb, app: store.New(cc, nil), prefix: prefix, http: &http.Client{
		Jar:           jar,
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// namesOnEveryMaster returns n lock names under prefix, with and without
// hash tags, that together land on every master of c.
func namesOnEveryMaster(t *testing.T, cc *redis.ClusterClient, prefix string, masters int) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	for i := 0; len(seen) < masters || len(out) < 6; i++ {
		name := fmt.Sprintf("%sorders:%d", prefix, i)
		if i%3 == 2 {
			name = fmt.Sprintf("%s{tag-%d}:orders", prefix, i)
		}
		node, err := cc.MasterForKey(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		seen[node.Options().Addr] = true
		out = append(out, name)
	}
	return out
}

// The API on a Cluster: every lock on every master is listed and can be
// opened and force-unlocked, a limiter is edited, the audit and event
// streams work, and a sharded (SPUBLISH-only, as Redisson >= 3.22 sends
// on a Cluster) unlock reaches the event stream once.
func TestClusterAPI(t *testing.T) {
	c := redistest.StartCluster(t, nil)
	e := newClusterEnv(t, c, nil)
	cc := e.srv.insp.Redis().(*redis.ClusterClient)
	ctx := t.Context()

	names := namesOnEveryMaster(t, cc, e.prefix, len(c.Masters))
	for i, n := range names {
		e.makeLock(n, fmt.Sprintf("w%d", i), 1, time.Minute)
	}
	eventually(t, 10*time.Second, "every lock listed", func() bool {
		var all struct{ Locks []apiLock }
		e.getJSON("/api/locks", 200, &all)
		return len(all.Locks) == len(names)
	})
	for i, n := range names {
		var l apiLock
		e.getJSON("/api/locks/"+esc(n), 200, &l)
		if l.Name != n || len(l.Holders) != 1 || l.Holders[0].ID != holderID(fmt.Sprintf("w%d", i)) {
			t.Errorf("detail of %s = %+v", n, l)
		}
	}

	t.Run("readyz and node metrics", func(t *testing.T) {
		eventually(t, 10*time.Second, "three masters probed up", func() bool {
			return len(e.srv.live.Nodes()) == len(c.Masters) && len(e.srv.live.NodesDown()) == 0
		})
		if st, _, b := e.do("GET", "/readyz", nil, nil); st != 200 {
			t.Fatalf("/readyz = %d %s", st, b)
		}
		_, _, b := e.do("GET", "/metrics", nil, nil)
		for _, m := range c.Masters {
			if want := `lockwarden_redis_node_up{node="` + m.Addr + `"} 1`; !strings.Contains(string(b), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("force-unlock on every master", func(t *testing.T) {
		for i, n := range names[:len(c.Masters)+1] {
			// A Redisson >= 3.22 waiter on a Redis 7 Cluster: SSUBSCRIBE only.
			ps := cc.SSubscribe(ctx, redistest.UnlockChannel(n))
			if msg, err := ps.ReceiveTimeout(ctx, 10*time.Second); err != nil {
				t.Fatalf("SSUBSCRIBE: %v %v", msg, err)
			}
			path := "/api/locks/" + esc(n) + "/force-unlock"
			e.sendJSON("POST", path, `{"holder":"`+holderID(fmt.Sprintf("w%d", i))+`","reason":"cluster test"}`, 200, nil)
			if k, _ := e.rdb.Exists(ctx, n).Result(); k != 0 {
				t.Errorf("%s still exists after force-unlock", n)
			}
			msg, err := ps.ReceiveTimeout(ctx, 10*time.Second)
			if m, ok := msg.(*redis.Message); err != nil || !ok || m.Payload != "0" {
				t.Errorf("the sharded waiter of %s got %v (%v), want the unlock message", n, msg, err)
			}
			ps.Close()
		}
		var audit struct {
			Records []map[string]any `json:"records"`
		}
		e.getJSON("/api/audit", 200, &audit)
		if len(audit.Records) < len(c.Masters)+1 {
			t.Errorf("audit has %d records, want %d", len(audit.Records), len(c.Masters)+1)
		}
	})

	t.Run("modify limiter", func(t *testing.T) {
		rl := e.prefix + "{rl}:edit"
		e.makeBucket(rl, 100, "10")
		eventually(t, 10*time.Second, "the limiter listed", func() bool {
			st, _, _ := e.do("GET", "/api/limiters/"+esc(rl), nil, nil)
			return st == 200
		})
		var l apiLimiter
		e.sendJSON("PUT", "/api/limiters/"+esc(rl), `{"rate":250,"interval_ms":4,"reason":"test"}`, 200, &l)
		if h := e.hgetall(rl); h["max_permits"] != "250" || h["interval"] != "4" {
			t.Errorf("hash after PUT: %v", h)
		}
		e.sendJSON("PUT", "/api/limiters/"+esc(rl), `{"rate":0,"interval_ms":4,"reason":"test"}`, 400, nil)
	})

	t.Run("sharded unlock event once", func(t *testing.T) {
		ws, _, err := e.dialWS(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		// The remaining locks' channels are watched once the sampler has
		// them; a probe message on each tells when.
		rest := names[len(c.Masters)+1:]
		for _, n := range rest {
			ch := redistest.UnlockChannel(n)
			eventually(t, 10*time.Second, "a sharded subscriber on "+ch, func() bool {
				node, err := cc.MasterForKey(ctx, ch)
				if err != nil {
					return false
				}
				m, err := node.PubSubShardNumSub(ctx, ch).Result()
				return err == nil && m[ch] == 1
			})
		}
		target := rest[0]
		before := countEvents(e, target)
		if err := cc.SPublish(ctx, redistest.UnlockChannel(target), "0").Err(); err != nil {
			t.Fatal(err)
		}
		fs := readFrames(t, ws, 5*time.Second, func(f frame) bool { return f.typ() == "unlock" && f["name"] == target })
		if len(fs) == 0 || fs[len(fs)-1]["name"] != target {
			t.Fatal("no unlock frame for a sharded unlock")
		}
		// A marker published both ways after it on every path: once it is
		// in, no second copy of the target's message can still be coming.
		marker := rest[1]
		if err := cc.Publish(ctx, redistest.UnlockChannel(marker), "0").Err(); err != nil {
			t.Fatal(err)
		}
		if err := cc.SPublish(ctx, redistest.UnlockChannel(marker), "0").Err(); err != nil {
			t.Fatal(err)
		}
		readFrames(t, ws, 5*time.Second, func(f frame) bool { return f.typ() == "unlock" && f["name"] == marker })
		if got := countEvents(e, target) - before; got != 1 {
			t.Errorf("sharded unlock shows %d times in /api/events, want once", got)
		}
		if got := countEvents(e, marker); got != 1 {
			t.Errorf("an unlock published both ways shows %d times, want once", got)
		}
	})
}

func countEvents(e *testEnv, name string) int {
	var evs struct{ Events []map[string]any }
	e.getJSON("/api/events", 200, &evs)
	n := 0
	for _, ev := range evs.Events {
		if ev["name"] == name && ev["type"] == "unlock" {
			n++
		}
	}
	return n
}

// Two replicas of the console over one Cluster show the same objects and
// numbers (all from Redis), and a browser signed in on one is signed in on
// the other: the session key derives from the tokens every replica has.
func TestClusterTwoReplicas(t *testing.T) {
	c := redistest.StartCluster(t, nil)
	a := newClusterEnv(t, c, withTokens)
	// B is another replica of A's deployment: same keys, same sign-in
	// state.
	b := newClusterEnv(t, c, func(cfg *Config) {
		withTokens(cfg)
		cfg.Match, cfg.AuthNamespace = a.prefix+"*", a.srv.cfg.AuthNamespace
	})
	b.prefix = a.prefix
	rl := a.prefix + "rl:shared"
	a.makeBucket(rl, 1000, "1")
	tb := a.app.NewTokenBucket(rl, nil)
	for range 7 {
		if _, err := tb.TryAcquire(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
	}
	window := func(e *testEnv) inspect.Counts {
		var l apiLimiter
		st, _, body := e.do("GET", "/api/limiters/"+esc(rl), nil, bearerOf(viewerTok))
		if st != 200 {
			return inspect.Counts{}
		}
		_ = json.Unmarshal(body, &l)
		return l.Window
	}
	eventually(t, 10*time.Second, "both replicas count the 7 acquires", func() bool {
		return window(a).Acquired == 7 && window(b).Acquired == 7
	})

	st, h, _ := a.signIn(adminTok, "/", nil)
	ck := sessionCookieOf(h)
	if st != http.StatusSeeOther || ck == nil {
		t.Fatalf("sign-in on replica A: %d, cookie %v", st, ck)
	}
	req, _ := http.NewRequest("GET", b.srv.URL()+"/limiters", nil)
	req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	resp, err := b.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("replica B with A's session cookie: %d, want 200", resp.StatusCode)
	}
}

// A master dies under lock traffic (each master has a replica): the console
// shows that node down (/readyz, /metrics, banner) while it answers, and
// once the Cluster has promoted the replica it is ready again without a
// restart. Lock traffic keeps going on the other masters throughout.
func TestClusterMasterDownAndFailover(t *testing.T) {
	// Without full coverage the other masters keep serving while one is
	// down (by default every node refuses with CLUSTERDOWN once the dead
	// master is flagged failed, until its replica takes over).
	c := redistest.StartCluster(t, &redistest.ClusterOptions{ReplicasPerMaster: 1,
		Extra: []string{"--cluster-require-full-coverage", "no"}})
	e := newClusterEnv(t, c, func(cfg *Config) { cfg.Alerts.For = map[string]time.Duration{RuleNodeDown: 0} })
	cc := e.srv.insp.Redis().(*redis.ClusterClient)
	ctx := t.Context()
	eventually(t, 10*time.Second, "every master probed up", func() bool {
		return len(e.srv.live.Nodes()) == len(c.Masters) && len(e.srv.live.NodesDown()) == 0
	})

	victim := c.Masters[1]
	names := namesOnEveryMaster(t, cc, e.prefix, len(c.Masters))
	var survivor string
	onVictim := map[string]bool{}
	for _, n := range names {
		node, err := cc.MasterForKey(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		onVictim[n] = node.Options().Addr == victim.Addr
	}
	// A lock outside the traffic, on a master that stays up.
	for i := 0; survivor == ""; i++ {
		n := fmt.Sprintf("%ssurvivor:%d", e.prefix, i)
		if node, err := cc.MasterForKey(ctx, n); err == nil && node.Options().Addr != victim.Addr {
			survivor = n
		}
	}
	traffic := startLockTraffic(t, e.app, names, onVictim)

	victim.Stop()
	eventually(t, 15*time.Second, "the dead master shown down", func() bool {
		return slices.Contains(e.srv.live.NodesDown(), victim.Addr)
	})
	st, _, body := e.do("GET", "/readyz", nil, nil)
	if st != 503 || !strings.Contains(string(body), victim.Addr) {
		t.Errorf("/readyz with a master down = %d %s, want 503 naming it", st, body)
	}
	_, _, m := e.do("GET", "/metrics", nil, nil)
	if want := `lockwarden_redis_node_up{node="` + victim.Addr + `"} 0`; !strings.Contains(string(m), want) {
		t.Errorf("/metrics lacks %s", want)
	}
	eventually(t, 10*time.Second, "a node-down alert naming the dead master", func() bool {
		var got alertsJSON
		e.getJSON("/api/alerts", 200, &got)
		for _, a := range got.Alerts {
			if a.Rule == RuleNodeDown && a.Name == victim.Addr {
				return true
			}
		}
		return false
	})
	_, _, page := e.do("GET", "/", nil, nil)
	if doc := parseHTML(t, page); !strings.Contains(doc.Find(`[data-testid="nodes-down"]`).Text(), victim.Addr) {
		t.Errorf("no banner naming %s", victim.Addr)
	}
	// The other masters keep serving locks meanwhile.
	l := e.app.NewLock(survivor, nil)
	if err := l.TryLock(ctx); err != nil {
		t.Errorf("lock on a live master while another is down: %v", err)
	} else {
		_ = l.Unlock(ctx)
	}

	eventually(t, 30*time.Second, "ready again after the failover", func() bool {
		st, _, _ := e.do("GET", "/readyz", nil, nil)
		return st == 200
	})
	for _, n := range e.srv.live.Nodes() {
		if n.Addr == victim.Addr {
			t.Errorf("the dead master is still listed after the failover: %+v", n)
		}
	}
	stats := traffic.stop()
	t.Logf("lock traffic: %d acquired, %d errors (the failover window), %d overlaps", stats.acquired, stats.errors, stats.overlaps)
	if stats.acquired == 0 {
		t.Error("no lock was taken during the test")
	}
	// The application's Client waits for the replica's acknowledgement
	// (store's default), so no grant it reported held was lost with the
	// failed master: no overlap anywhere, on it or on the masters that
	// never failed.
	if stats.overlaps > 0 {
		t.Errorf("%d overlapping holds (%d on masters that never failed) with replica acknowledgement on",
			stats.overlaps, stats.overlapsOnSurvivors)
	}
}

// A Sentinel failover is followed: the console is ready again within 15 s.
func TestSentinelFailoverReady(t *testing.T) {
	// Its own server and mostly waiting: it runs beside the others.
	t.Parallel()
	s := redistest.StartSentinel(t, nil)
	rdb := redistest.NewFailoverClient(t, s)
	prefix := redistest.Prefix(t)
	srv := New(Config{Inspector: inspect.New(rdb, nil), Listen: "127.0.0.1:0", Match: prefix + "*", AuditKey: "lw:{audit}:" + prefix})
	if err := srv.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	e := &testEnv{t: t, srv: srv, rdb: rdb, prefix: prefix, http: &http.Client{Timeout: 5 * time.Second}}
	eventually(t, 10*time.Second, "ready", func() bool { st, _, _ := e.do("GET", "/readyz", nil, nil); return st == 200 })
	old, err := s.CurrentMaster(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s.Master.Stop()
	eventually(t, 15*time.Second, "not ready with the primary gone or a new one", func() bool {
		now, err := s.CurrentMaster(context.WithoutCancel(t.Context()))
		st, _, _ := e.do("GET", "/readyz", nil, nil)
		return st == 503 || (err == nil && now != old)
	})
	eventually(t, 15*time.Second, "ready after the Sentinel failover", func() bool {
		st, _, _ := e.do("GET", "/readyz", nil, nil)
		return st == 200
	})
}

// lockTraffic takes and releases locks from a few goroutines and counts
// holds that overlapped (two handles inside one lock at once, the first
// one's lease still running from before its call), split by whether the
// lock's master is the one that fails.
type lockTraffic struct {
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	held map[string]time.Time // lock -> when its holder's TryLock was called
	lockTrafficStats
}

type lockTrafficStats struct {
	acquired, errors, overlaps, overlapsOnSurvivors int
}

func startLockTraffic(t *testing.T, app *store.Client, names []string, onVictim map[string]bool) *lockTraffic {
	t.Helper()
	tr := &lockTraffic{done: make(chan struct{}), held: map[string]time.Time{}}
	const lease = 2 * time.Second
	ctx := t.Context()
	for g := range 4 {
		tr.wg.Add(1)
		go func() {
			defer tr.wg.Done()
			for i := 0; i < 100000; i++ {
				select {
				case <-tr.done:
					return
				default:
				}
				name := names[(g+i)%len(names)]
				l := app.NewLock(name, &store.LockOptions{Lease: lease})
				called := time.Now()
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				err := l.TryLock(cctx)
				cancel()
				var le *store.LockedError
				switch {
				case errors.As(err, &le):
					continue
				case err != nil:
					tr.mu.Lock()
					tr.errors++
					tr.mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					continue
				}
				tr.mu.Lock()
				tr.acquired++
				// Another holder whose lease cannot have run out yet: its
				// hold began after its call, a lease ago at the earliest.
				if prev, ok := tr.held[name]; ok && time.Since(prev) < lease {
					tr.overlaps++
					if !onVictim[name] {
						tr.overlapsOnSurvivors++
					}
				}
				tr.held[name] = called
				tr.mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				tr.mu.Lock()
				if tr.held[name] == called {
					delete(tr.held, name)
				}
				tr.mu.Unlock()
				cctx, cancel = context.WithTimeout(ctx, time.Second)
				_ = l.Unlock(cctx)
				cancel()
			}
		}()
	}
	return tr
}

func (tr *lockTraffic) stop() lockTrafficStats {
	close(tr.done)
	tr.wg.Wait()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.lockTrafficStats
}
