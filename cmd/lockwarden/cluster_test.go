package main

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redisproc"
)

// demo --cluster runs the same traffic on a private 3-master Cluster, the
// console finds locks whose keys live on different masters, and every
// node dies with the demo.
func TestCmdDemoCluster(t *testing.T) {
	p := startProc(t, nil, "demo", "--cluster", "--listen", "127.0.0.1:0")
	line := p.waitLine("lockwarden demo: Redis Cluster of 3 masters at ", 60*time.Second)
	rest := strings.TrimPrefix(line, "lockwarden demo: Redis Cluster of 3 masters at ")
	addrPart, pidPart, ok := strings.Cut(rest, " (pids ")
	addrs := strings.Fields(addrPart)
	if !ok || len(addrs) != 3 {
		t.Fatalf("unexpected cluster line %q", line)
	}
	var pids []int
	for _, f := range strings.Fields(strings.TrimSuffix(pidPart, ")")) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			t.Fatalf("unexpected cluster line %q", line)
		}
		pids = append(pids, pid)
	}
	base := listeningURL(t, p)

	// The console must see the demo's objects through the Cluster client,
	// whichever master holds each key.
	var locks map[string]bool
	apiSeen := false
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 200 && time.Now().Before(deadline); i++ {
		var lim apiLimiters
		getJSON(t, base+"/api/limiters", &lim)
		for _, l := range lim.Limiters {
			apiSeen = apiSeen || (l.Name == "demo:api" && l.Window.Acquired > 0)
		}
		var lk apiLocks
		getJSON(t, base+"/api/locks", &lk)
		locks = map[string]bool{}
		for _, l := range lk.Locks {
			locks[l.Name] = true
		}
		if apiSeen && locks["demo:lock:stuck"] && len(locks) >= 3 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !apiSeen || !locks["demo:lock:stuck"] || len(locks) < 3 {
		t.Errorf("within 20 s: demo:api with traffic %v, locks %v; want demo:lock:stuck and two more", apiSeen, locks)
	}

	p.signal(syscall.SIGTERM)
	if code := p.wait(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	for i, pid := range pids {
		if !processGone(pid) {
			t.Errorf("cluster node pid %d still runs after the demo exited", pid)
		}
		if err := dialOnce(addrs[i]); err == nil {
			t.Errorf("cluster node %s still accepts connections after the demo exited", addrs[i])
		}
	}
}

// serve --redis takes any Cluster node's URL and lists locks from every
// master; a redis+sentinel:// URL finds the primary through the sentinel.
func TestCmdServeClusterAndSentinel(t *testing.T) {
	cl, err := redisproc.StartCluster(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { cc.Close() })
	sn, err := redisproc.StartSentinel(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sn.Stop)
	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sn.MasterName, SentinelAddrs: []string{sn.Sentinel.Addr}})
	t.Cleanup(func() { fc.Close() })

	const holder = "0f8a2c1e-7b3d-4e9f-a6c5-123456789abc:1"
	cases := []struct {
		url  string
		rdb  redis.UniversalClient
		keys []string
	}{
		// Six names hash to slots of all three masters.
		{"redis://" + cl.Masters[1].Addr, cc, []string{"app:lock:a", "app:lock:b", "app:lock:c", "app:lock:d", "app:lock:e", "app:lock:f"}},
		{sn.URL(), fc, []string{"app:lock:s"}},
	}
	for _, tc := range cases {
		masters := map[string]bool{}
		for _, k := range tc.keys {
			if err := tc.rdb.HSet(t.Context(), k, holder, 1).Err(); err != nil {
				t.Fatal(err)
			}
			if err := tc.rdb.PExpire(t.Context(), k, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if cc, ok := tc.rdb.(*redis.ClusterClient); ok {
				m, err := cc.MasterForKey(t.Context(), k)
				if err != nil {
					t.Fatal(err)
				}
				masters[m.Options().Addr] = true
			}
		}
		if tc.rdb == redis.UniversalClient(cc) && len(masters) != 3 {
			t.Fatalf("the test's keys live on %d masters, want all 3", len(masters))
		}

		p := startProc(t, nil, "serve", "--redis", tc.url, "--listen", "127.0.0.1:0", "--match", "app:*")
		base := listeningURL(t, p)
		var found map[string]bool
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; i < 100 && time.Now().Before(deadline); i++ {
			var lk apiLocks
			getJSON(t, base+"/api/locks", &lk)
			found = map[string]bool{}
			for _, l := range lk.Locks {
				found[l.Name] = true
			}
			if len(found) == len(tc.keys) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, k := range tc.keys {
			if !found[k] {
				t.Errorf("%s: console lists %v, missing %s", tc.url, found, k)
			}
		}
		p.signal(syscall.SIGTERM)
		if code := p.wait(10 * time.Second); code != 0 {
			t.Fatalf("%s: exit code %d after SIGTERM, want 0", tc.url, code)
		}
	}
}
