package web

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// apiStaleLimiter is what the API says of a limiter and its freshness.
type apiStaleLimiter struct {
	Name      string `json:"name"`
	Available int64  `json:"available"`
	Stale     *struct {
		Node       string `json:"node"`
		LastReadMS int64  `json:"last_read_ms"`
		Reason     string `json:"reason"`
	} `json:"stale"`
}

// apiStaleLock is what the API says of a lock and its freshness.
type apiStaleLock struct {
	Name    string           `json:"name"`
	Holders []inspect.Holder `json:"holders"`
	Stale   *struct {
		Node string `json:"node"`
	} `json:"stale"`
}

func (e *testEnv) staleLocks() []apiStaleLock {
	var all struct{ Locks []apiStaleLock }
	e.getJSON("/api/locks", 200, &all)
	return all.Locks
}

// staleLimiters is GET /api/limiters by name.
func (e *testEnv) staleLimiters() map[string]apiStaleLimiter {
	var all struct{ Limiters []apiStaleLimiter }
	e.getJSON("/api/limiters", 200, &all)
	out := make(map[string]apiStaleLimiter, len(all.Limiters))
	for _, l := range all.Limiters {
		out[l.Name] = l
	}
	return out
}

// bucketPerMaster makes one token bucket on each master of c (capacity
// bucketCap, one permit back per hour, so its available count falls by
// one per acquire) and returns their names by master address.
func bucketPerMaster(t *testing.T, e *testEnv, cc *redis.ClusterClient, masters int) map[string]string {
	t.Helper()
	ctx := t.Context()
	out := map[string]string{}
	for i := 0; len(out) < masters; i++ {
		name := fmt.Sprintf("%sbucket:%d", e.prefix, i)
		node, err := cc.MasterForKey(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := out[node.Options().Addr]; ok {
			continue
		}
		out[node.Options().Addr] = name
		if err := e.app.NewTokenBucket(name, nil).TrySetRate(ctx, store.TokenBucketConfig{Capacity: bucketCap,
			IntervalMS: float64(time.Hour.Milliseconds()), Initial: bucketCap}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

const bucketCap = 1000

// acquire takes n permits from the bucket name, one call each.
func acquire(t *testing.T, e *testEnv, name string, n int) {
	t.Helper()
	b := e.app.NewTokenBucket(name, nil)
	for range n {
		if r, err := b.TryAcquire(t.Context(), 1); err != nil || !r.Allowed {
			t.Fatalf("acquire on %s: %+v %v", name, r, err)
		}
	}
}

// A master goes down with no replica to take over: the limiters on the
// other masters keep their live numbers in the console, the one on the
// dead master keeps its last numbers marked stale (API, page, frame) while
// /readyz names the node, and once the master is back its limiter is live
// again without a restart. Before the fix the whole tick failed (the
// Cluster pipeline's error, TIME sent to the dead master, the full pass),
// so every limiter froze at its last good tick.
func TestClusterNodeDownOthersStayLive(t *testing.T) {
	// Its own server and mostly waiting: it runs beside the others.
	t.Parallel()
	// Without full coverage the other masters keep serving while one is
	// down (by default every node refuses once the dead master is flagged).
	c := redistest.StartCluster(t, &redistest.ClusterOptions{Extra: []string{"--cluster-require-full-coverage", "no"}})
	e := newClusterEnv(t, c, nil)
	cc := e.srv.insp.Redis().(*redis.ClusterClient)
	ctx := t.Context()

	victim := c.Masters[1]
	buckets := bucketPerMaster(t, e, cc, len(c.Masters))
	dead := buckets[victim.Addr]
	var live []string
	for addr, name := range buckets {
		if addr != victim.Addr {
			live = append(live, name)
		}
	}
	slices.Sort(live)
	for _, name := range buckets {
		acquire(t, e, name, 1)
	}
	// A held lock on the master that goes down.
	var deadLock string
	for i := 0; deadLock == ""; i++ {
		n := fmt.Sprintf("%slock:%d", e.prefix, i)
		if node, err := cc.MasterForKey(ctx, n); err == nil && node.Options().Addr == victim.Addr {
			deadLock = n
		}
	}
	e.makeLock(deadLock, "w1", 1, time.Hour)
	eventually(t, 15*time.Second, "every bucket listed live at capacity-1, and the lock", func() bool {
		// Before any fault a tick may still fail on a loaded machine (the
		// lists answer 503 until the next one): wait it out here only.
		if sn := e.srv.live.Latest(); sn == nil || !sn.RedisUp {
			return false
		}
		if !slices.ContainsFunc(e.staleLocks(), func(l apiStaleLock) bool { return l.Name == deadLock && l.Stale == nil }) {
			return false
		}
		got := e.staleLimiters()
		for _, name := range buckets {
			if l, ok := got[name]; !ok || l.Available != bucketCap-1 || l.Stale != nil {
				return false
			}
		}
		return true
	})

	victim.Pause()
	eventually(t, 15*time.Second, "the dead master's bucket marked stale", func() bool {
		l, ok := e.staleLimiters()[dead]
		return ok && l.Stale != nil
	})
	// New acquires on the live masters still reach the console.
	for _, name := range live {
		acquire(t, e, name, 3)
	}
	eventually(t, 15*time.Second, "the live buckets' new acquires", func() bool {
		got := e.staleLimiters()
		for _, name := range live {
			if l := got[name]; l.Available != bucketCap-4 || l.Stale != nil {
				return false
			}
		}
		return true
	})
	got := e.staleLimiters()
	if l := got[dead]; l.Stale == nil || l.Stale.Node != victim.Addr || l.Available != bucketCap-1 || l.Stale.LastReadMS <= 0 {
		t.Errorf("the dead master's bucket = %+v (stale %+v), want its last numbers marked stale on %s", l, l.Stale, victim.Addr)
	}
	if st, _, body := e.do("GET", "/readyz", nil, nil); st != 503 || !strings.Contains(string(body), victim.Addr) {
		t.Errorf("/readyz with a master down = %d %s, want 503 naming it", st, body)
	}
	_, _, m := e.do("GET", "/metrics", nil, nil)
	if want := `lockwarden_redis_node_up{node="` + victim.Addr + `"} 0`; !strings.Contains(string(m), want) {
		t.Errorf("/metrics lacks %s", want)
	}
	i := slices.IndexFunc(e.staleLocks(), func(l apiStaleLock) bool { return l.Name == deadLock })
	if locks := e.staleLocks(); i < 0 || locks[i].Stale == nil || locks[i].Stale.Node != victim.Addr || len(locks[i].Holders) != 1 {
		t.Errorf("the dead master's lock is not listed stale with its holder: %+v", locks)
	}
	_, _, lockPage := e.do("GET", "/locks", nil, nil)
	if mark := parseHTML(t, lockPage).Find(fmt.Sprintf(`[data-lock=%q] [data-testid="stale"]`, deadLock)).Text(); !strings.Contains(mark, victim.Addr) {
		t.Errorf("lock row marker = %q, want it naming %s", mark, victim.Addr)
	}
	_, _, page := e.do("GET", "/", nil, nil)
	if doc := parseHTML(t, page); !strings.Contains(doc.Find(`[data-testid="nodes-down"]`).Text(), victim.Addr) {
		t.Errorf("no banner naming %s", victim.Addr)
	}
	_, _, page = e.do("GET", "/limiters", nil, nil)
	doc := parseHTML(t, page)
	for name := range got {
		mark := doc.Find(fmt.Sprintf(`[data-testid="limiter-row"][data-limiter=%q] [data-testid="stale"]`, name)).Text()
		if want := name == dead; want != (mark != "") || (want && !strings.Contains(mark, victim.Addr)) {
			t.Errorf("row of %s: stale marker %q (dead %v)", name, mark, want)
		}
	}
	conn, _, err := e.dialWS(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var f struct {
		Type  string
		Stale map[string]struct{ Node string }
	}
	for f.Type != "stats" {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if err := conn.ReadJSON(&f); err != nil {
			t.Fatalf("reading the first stats frame: %v", err)
		}
	}
	if f.Stale[dead].Node != victim.Addr || f.Stale[deadLock].Node != victim.Addr || len(f.Stale) != 2 {
		t.Errorf("stats frame's stale = %+v, want only %s and %s on %s", f.Stale, dead, deadLock, victim.Addr)
	}
	// TIME has no key, so a Cluster pipeline sends it to the masters in
	// turn: some of these go to the dead one and must still succeed.
	for range 2 * len(c.Masters) {
		smp, err := e.srv.insp.Sample(ctx, nil, append([]string{dead}, live...))
		if err != nil {
			t.Fatalf("Sample with a master down: %v", err)
		}
		if u, ok := smp.Unreadable[dead]; !ok || u.Node != victim.Addr || len(smp.Unreadable) != 1 || len(smp.Limiters) != len(live) {
			t.Fatalf("Sample with a master down: unreadable %+v, %d limiters read, want only %s unread", smp.Unreadable, len(smp.Limiters), dead)
		}
	}

	// Back, empty (no persistence): its bucket is made again and is live.
	if err := victim.Resume(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the master back and its bucket made again", func() bool {
		return e.app.NewTokenBucket(dead, nil).TrySetRate(ctx, store.TokenBucketConfig{Capacity: bucketCap,
			IntervalMS: float64(time.Hour.Milliseconds()), Initial: bucketCap}) == nil
	})
	acquire(t, e, dead, 2)
	eventually(t, 30*time.Second, "the bucket live again after the master's return", func() bool {
		l, ok := e.staleLimiters()[dead]
		return ok && l.Stale == nil && l.Available == bucketCap-2
	})
	for _, name := range live {
		acquire(t, e, name, 1)
	}
	eventually(t, 15*time.Second, "the other buckets still live", func() bool {
		got := e.staleLimiters()
		for _, name := range live {
			if l := got[name]; l.Available != bucketCap-5 || l.Stale != nil {
				return false
			}
		}
		return true
	})
}
