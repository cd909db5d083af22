package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/faulttest"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/live"
)

// A lock a store client announces after the console started is listed
// from the registry and shows on /status and /api/status with its source;
// /metrics carries the discovery series.
func TestStatusDiscoveryOfAnnouncedLock(t *testing.T) {
	srv := redistest.StartT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	e := newEnvOn(t, rdb, func(c *Config) {
		c.TickInterval = 50 * time.Millisecond
		c.KeyspaceEvents = walk.KeyEventsOff
	})
	var st live.DiscoveryStatus
	eventually(t, 5*time.Second, "a first status", func() bool {
		e.getJSON("/api/status", 200, &st)
		return st.Passes > 0
	})
	if !strings.HasPrefix(st.KeyspaceEvents, "off") || !st.Scanning || st.PassTargetSeconds != 60 || st.Budget != inspect.DefaultDiscoveryBudget {
		t.Errorf("status %+v", st)
	}
	name := e.prefix + "announced"
	e.makeLock(name, "1", 1, time.Minute)
	now, _ := rdb.Time(t.Context()).Result()
	rdb.ZAdd(t.Context(), inspect.RegistryNamesKey, redis.Z{Score: float64(now.UnixMilli()), Member: name})
	t.Cleanup(func() { rdb.ZRem(context.Background(), inspect.RegistryNamesKey, name) })
	eventually(t, 5*time.Second, "the announced lock on /api/status", func() bool {
		e.getJSON("/api/status", 200, &st)
		for _, r := range st.Recent {
			if r.Name == name {
				return true
			}
		}
		return false
	})
	var src string
	for _, r := range st.Recent {
		if r.Name == name {
			src = r.Source
		}
	}
	// The walk covers this tiny keyspace every tick too, so either source
	// may win; what matters is that the registry was read.
	if st.Announced < 1 || (src != string(inspect.SourceAnnounced) && src != string(inspect.SourceScan)) {
		t.Errorf("announced %d, source %q", st.Announced, src)
	}
	code, _, body := e.do("GET", "/status", nil, nil)
	doc := parseHTML(t, body)
	if code != 200 || !strings.Contains(doc.Find(`[data-testid="status-recent"]`).Text(), name) ||
		!strings.HasPrefix(doc.Find(`[data-testid="status-keyspace-events"]`).Text(), "off") {
		t.Errorf("/status %d:\n%s", code, body)
	}
	_, _, metrics := e.do("GET", "/metrics", nil, nil)
	if st.Keyspace < 1 {
		t.Errorf("keyspace_keys %d, want the database's size", st.Keyspace)
	}
	for _, m := range []string{"lockwarden_discovery_last_pass_timestamp_seconds", "lockwarden_discovery_pass_duration_seconds", "lockwarden_discovery_keys_scanned_total",
		"lockwarden_discovery_pass_target_seconds", "lockwarden_discovery_budget_pass_seconds", "lockwarden_discovery_cost_per_key_seconds", "lockwarden_discovery_keyspace_keys"} {
		if !strings.Contains(string(metrics), "\n"+m+" ") {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

// Where full passes are the reconciliation (string patterns here; a
// Cluster too), a foreign lock they find is listed on /api/status like the
// walk's finds (full passes only adopted their result, so /status never
// said a foreign lock had been found).
func TestStatusListsFullPassFinds(t *testing.T) {
	srv := redistest.StartT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	e := newEnvOn(t, rdb, func(c *Config) {
		c.Inspector = inspect.New(rdb, &inspect.Options{Patterns: inspect.ObjectPatterns{TokenLocks: []string{"nothing-matches:*"}}})
		c.TickInterval = 50 * time.Millisecond
		c.DiscoverInterval = time.Second
		c.DiscoveryBudget = 1
		c.KeyspaceEvents = walk.KeyEventsOff
	})
	var st live.DiscoveryStatus
	e.getJSON("/api/status", 200, &st)
	if st.Scanning {
		t.Fatalf("with a string pattern the walk should not SCAN: %+v", st)
	}
	name := e.prefix + "foreign"
	e.makeLock(name, "1", 1, time.Minute)
	eventually(t, 10*time.Second, "the foreign lock among the finds", func() bool {
		e.getJSON("/api/status", 200, &st)
		for _, r := range st.Recent {
			if r.Name == name {
				return r.Source == string(inspect.SourceScan) && r.Kind == "lock"
			}
		}
		return false
	})
}

// A full pass longer than the tick's bound (seconds over millions of keys)
// left the tick's sample an expired context: with full passes every tick
// (a Cluster, string patterns), no sample ever succeeded. Every reply here
// comes 600 ms late, so the pass's five round trips outlast the 2 s bound.
func TestStatusSampleAfterASlowFullPass(t *testing.T) {
	// Its own server and mostly waiting: it runs beside the others.
	t.Parallel()
	srv := redistest.StartT(t)
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { direct.Close() })
	px, err := faulttest.NewProxy(srv.Addr, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	px.SetFault(faulttest.Fault{DelayProb: 1, Delay: 1100 * time.Millisecond})
	slow := redis.NewClient(&redis.Options{Addr: px.Addr(), ReadTimeout: 5 * time.Second})
	t.Cleanup(func() { slow.Close() })
	e := newEnvOn(t, slow, func(c *Config) {
		c.Inspector = inspect.New(slow, &inspect.Options{Patterns: inspect.ObjectPatterns{TokenLocks: []string{"nothing-matches:*"}}})
		c.TickInterval = 50 * time.Millisecond
		c.DiscoverInterval = time.Second
		c.DiscoveryBudget = 1
		c.KeyspaceEvents = walk.KeyEventsOff
	})
	holder := store.New(direct, &store.Options{NoRegistry: true}).ID() + ":1"
	direct.HSet(t.Context(), e.prefix+"held", holder, 1)
	direct.PExpire(t.Context(), e.prefix+"held", time.Minute)
	var st live.DiscoveryStatus
	eventually(t, 20*time.Second, "a sample after the full pass", func() bool {
		e.getJSON("/api/status", 200, &st)
		return st.Locks > 0
	})
}
