package redisconn_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redisconn"
	"github.com/lockwarden/lockwarden/store/redistest"
)

func open(t *testing.T, url string) (redis.UniversalClient, redisconn.Info) {
	t.Helper()
	c, info, err := redisconn.Open(t.Context(), url, &redisconn.Options{ClientName: "redisconn-test"})
	if err != nil {
		t.Fatalf("Open(%s): %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c, info
}

func TestOpenSingleNode(t *testing.T) {
	s := redistest.StartT(t)
	c, info := open(t, "redis://"+s.Addr+"/2")
	if _, ok := c.(*redis.Client); !ok {
		t.Fatalf("client is %T, want *redis.Client", c)
	}
	if info.Topology != redisconn.Single || len(info.Masters) != 1 || info.Masters[0] != s.Addr || info.Version == "" {
		t.Fatalf("info = %+v", info)
	}
	if err := c.Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// The /2 in the URL selected database 2.
	direct := redis.NewClient(&redis.Options{Addr: s.Addr, DB: 2})
	t.Cleanup(func() { direct.Close() })
	if v, err := direct.Get(t.Context(), "k").Result(); err != nil || v != "v" {
		t.Fatalf("db 2 has k = %q, %v", v, err)
	}
	name, err := c.ClientGetName(t.Context()).Result()
	if err != nil || name != "redisconn-test" {
		t.Fatalf("client name %q, %v", name, err)
	}
}

func TestOpenDetectsClusterFromAnyNode(t *testing.T) {
	cl := redistest.StartCluster(t, nil)
	for _, url := range []string{
		"redis://" + cl.Masters[2].Addr, // any node alone
		cl.URL(),                        // with ?addr= seeds
	} {
		c, info := open(t, url)
		cc, ok := c.(*redis.ClusterClient)
		if !ok {
			t.Fatalf("%s: client is %T, want *redis.ClusterClient", url, c)
		}
		if info.Topology != redisconn.Cluster || len(info.Masters) != 3 || info.Version == "" {
			t.Fatalf("%s: info = %+v", url, info)
		}
		// Keys in every slot range: a node-local client would get MOVED.
		for i := 0; i < 20; i++ {
			k := "k" + strings.Repeat("x", i)
			if err := cc.Set(t.Context(), k, i, 0).Err(); err != nil {
				t.Fatalf("%s: SET %s: %v", url, k, err)
			}
		}
	}
}

func TestOpenClusterRejectsOtherDatabase(t *testing.T) {
	cl := redistest.StartCluster(t, nil)
	_, _, err := redisconn.Open(t.Context(), "redis://"+cl.Masters[0].Addr+"/3", nil)
	if !errors.Is(err, redisconn.ErrBadURL) || !strings.Contains(err.Error(), "only database 0") {
		t.Fatalf("err = %v, want ErrBadURL about database 0", err)
	}
}

func TestOpenSentinelFollowsFailover(t *testing.T) {
	s := redistest.StartSentinel(t, nil)
	c, info := open(t, s.URL())
	if _, ok := c.(*redis.Client); !ok {
		t.Fatalf("client is %T, want the failover *redis.Client", c)
	}
	if info.Topology != redisconn.Sentinel || info.MasterName != s.MasterName ||
		len(info.Masters) != 1 || info.Masters[0] != s.Master.Addr {
		t.Fatalf("info = %+v, want master %s", info, s.Master.Addr)
	}
	ctx := t.Context()
	if err := c.Set(ctx, "before", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Let the replica have the write, then lose the master for good.
	if err := c.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	s.Master.Stop()

	deadline := time.Now().Add(15 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = c.Set(ctx, "after", 2, 0).Err(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("no write succeeded within 15s of killing the master: %v", err)
	}
	now, err := s.CurrentMaster(ctx)
	if err != nil || now != s.Replica.Addr {
		t.Fatalf("sentinel's master is %q, %v; want the promoted replica %s", now, err, s.Replica.Addr)
	}
	if v, err := c.Get(ctx, "before").Int(); err != nil || v != 1 {
		t.Fatalf("write before the failover: %d, %v", v, err)
	}
}

func TestOpenBadURLs(t *testing.T) {
	cases := []struct{ url, want string }{
		{"http://u:hunter22@127.0.0.1:6379", "scheme must be"},
		{"127.0.0.1:6379", "scheme must be"},
		{"redis://u:hunter22@127.0.0.1:notaport", "invalid port"},
		{"redis://u:hunter22@127.0.0.1:6379?bogus=1", "unexpected option: bogus"},
		{"redis://u:hunter22@127.0.0.1:6379?addr=nohostport", "addr"},
		{"redis://u:hunter22@127.0.0.1:6379/3?addr=127.0.0.1:6380", "only database 0"},
		{"redis+sentinel://u:hunter22@127.0.0.1:26379", "no master name"},
		{"redis+sentinel://u:hunter22@127.0.0.1:26379/", "no master name"},
		{"redis+sentinel://u:hunter22@127.0.0.1:26379,nope/mymaster", `"nope" is not host:port`},
		{"redis+sentinel://u:hunter22@127.0.0.1:0/mymaster", "no valid port"},
		{"redis+sentinel://u:hunter22@127.0.0.1:26379/mymaster/x", "database"},
		{"redis+sentinel://u:hunter22@127.0.0.1:26379/m/0/extra", "more than /<master>/<db>"},
		{"redis+sentinel://u:hunter22@127.0.0.1:26379/m?master_name=n", `"master_name"`},
		{"redis+sentinel://u:hunter22@127.0.0.1:26379/m?bogus=1&sentinel_password=hunter22", "unexpected option: bogus"},
	}
	for _, tc := range cases {
		_, _, err := redisconn.Open(t.Context(), tc.url, nil)
		if !errors.Is(err, redisconn.ErrBadURL) {
			t.Errorf("%s: err = %v, want ErrBadURL", tc.url, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %q does not say %q", tc.url, err, tc.want)
		}
		if strings.Contains(err.Error(), "hunter22") {
			t.Errorf("%s: error shows the password: %q", tc.url, err)
		}
	}
}

func TestOpenUnreachableHidesPassword(t *testing.T) {
	s := redistest.StartT(t)
	s.Stop() // a port nothing listens on
	for _, url := range []string{
		"redis://u:hunter22@" + s.Addr,
		"redis+sentinel://u:hunter22@" + s.Addr + "/mymaster?sentinel_password=hunter22",
	} {
		_, _, err := redisconn.Open(t.Context(), url, &redisconn.Options{PingTimeout: 2 * time.Second})
		if !errors.Is(err, redisconn.ErrUnreachable) {
			t.Fatalf("%s: err = %v, want ErrUnreachable", url, err)
		}
		if strings.Contains(err.Error(), "hunter22") || !strings.Contains(err.Error(), "xxxxx") {
			t.Fatalf("%s: error must show the URL without its password: %q", url, err)
		}
	}
}

func TestParseSentinelURL(t *testing.T) {
	fo, err := redisconn.ParseSentinelURL("rediss+sentinel://app:p%40ss@10.0.0.1:26379,10.0.0.2:26380/orders/4?dial_timeout=2s&sentinel_password=sp")
	if err != nil {
		t.Fatal(err)
	}
	if fo.MasterName != "orders" || fo.DB != 4 || fo.Username != "app" || fo.Password != "p@ss" ||
		fo.SentinelPassword != "sp" || fo.DialTimeout != 2*time.Second || fo.TLSConfig == nil ||
		strings.Join(fo.SentinelAddrs, ",") != "10.0.0.1:26379,10.0.0.2:26380" {
		t.Fatalf("options = %+v", fo)
	}
}

// The client honours its caller's deadline when the server hangs (stopped,
// not refusing): the call ends with the context's error, not go-redis's
// read timeout and retries, which is what lets the console's tick and
// health check move on from a hung Cluster master.
func TestOpenHonoursDeadlinesOfAHungServer(t *testing.T) {
	s := redistest.StartT(t)
	c, _ := open(t, "redis://"+s.Addr)
	// Without the option go-redis also ends with the deadline's error, but
	// only after its own read timeout (5 s by default) and retries: the
	// option is what makes the deadline the bound, so it is what is checked.
	if !c.(*redis.Client).Options().ContextTimeoutEnabled {
		t.Fatal("the client ignores ctx deadlines on reads (ContextTimeoutEnabled off)")
	}
	if err := syscall.Kill(s.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(s.PID(), syscall.SIGCONT) })
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	err := c.Ping(ctx).Err()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PING of a hung server = %v, want the deadline's error", err)
	}
}
