package walk

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

func TestDiscoverMix(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	inspecttest.Cleanup(t, rdb, p)
	c := inspect.New(redistest.UniversalFor(t, rdb), nil)
	now := redistest.NowMS(t, rdb)

	// What must be found.
	inspecttest.Lock(t, rdb, p+"lock:orders", "1", 1)
	inspecttest.Lock(t, rdb, p+"lock:锁 {tag} ключ", "worker-7", 3)
	inspecttest.Bucket(t, rdb, p+"rl:api", now, 10, 500, "2.0")
	inspecttest.Bucket(t, rdb, p+"rl:slow", now-5000, 0, 20, "1000")

	// Look-alikes and other types that must not be.
	rdb.HSet(ctx, p+"app:counter", inspecttest.HolderUUID+":1", 1) // lock layout, no lease
	rdb.HSet(ctx, p+"app:cart", "user:42", 3)
	rdb.PExpire(ctx, p+"app:cart", time.Minute)
	rdb.HSet(ctx, p+"app:two", inspecttest.HolderUUID+":1", 1, inspecttest.HolderUUID+":2", 1)
	rdb.PExpire(ctx, p+"app:two", time.Minute)
	rdb.HSet(ctx, p+"app:four", "last_mill_second", now, "stored_permits", 1, "max_permits", 5, "interval", 2)
	rdb.HSet(ctx, p+"app:badbucket", "last_mill_second", now, "stored_permits", 1, "max_permits", 0, "interval", 2, "app", "x")
	rdb.HSet(ctx, p+"app:profile", "name", "Ada", "email", "ada@example.com", "age", "36", "city", "London", "lang", "en")
	big := make([]any, 0, 200)
	for i := 0; i < 100; i++ {
		big = append(big, inspecttest.HolderUUID+":"+strconv.Itoa(i), 1)
	}
	rdb.HSet(ctx, p+"app:big", big...)
	rdb.PExpire(ctx, p+"app:big", time.Minute)
	rdb.Set(ctx, p+"str:lock", inspecttest.HolderUUID+":1", time.Minute)
	rdb.RPush(ctx, p+"list", "a")
	rdb.ZAdd(ctx, p+"zset", redis.Z{Score: 1, Member: "m"})
	rdb.SAdd(ctx, p+"set", "m")
	// Look-alikes of other libraries' layouts: an Envoy-shaped name with
	// text, a sidekiq-shaped hash of other fields, a sorted set of tokens
	// scored like a leaderboard.
	rdb.Set(ctx, p+"page_user_42_"+strconv.FormatInt(now/1000/60*60, 10), "hello", time.Minute)
	rdb.HSet(ctx, p+"app:LOCKED", "user", "42")
	rdb.ZAdd(ctx, p+"tokens", redis.Z{Score: 3, Member: strings.Repeat("A", 43) + "="})

	d, err := Discover(ctx, c, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	var locks, lims []string
	for _, l := range d.Locks {
		locks = append(locks, l.Name)
	}
	for _, l := range d.Limiters {
		lims = append(lims, l.Name)
	}
	wantLocks := []string{p + "lock:orders", p + "lock:锁 {tag} ключ"}
	wantLims := []string{p + "rl:api", p + "rl:slow"}
	if fmt.Sprint(locks) != fmt.Sprint(wantLocks) || fmt.Sprint(lims) != fmt.Sprint(wantLims) {
		t.Fatalf("Discover found locks %q limiters %q, want %q %q", locks, lims, wantLocks, wantLims)
	}
	if d.Skipped != 1 {
		t.Errorf("Skipped = %d, want 1 (the 100-field hash)", d.Skipped)
	}
	if d.LocksTruncated || d.LimitersTruncated {
		t.Errorf("truncated flags set: %+v", d)
	}

	l := d.Locks[1]
	if l.Kind != inspect.KindReentrant || len(l.Holders) != 1 || !reflect.DeepEqual(l.Holders[0], inspect.Holder{ID: inspecttest.HolderUUID + ":worker-7", Count: 3}) {
		t.Errorf("lock = %+v", l)
	}
	if l.PTTL <= 0 || l.PTTL > time.Minute {
		t.Errorf("lock PTTL = %v, want (0, 1m]", l.PTTL)
	}
	api, slow := d.Limiters[0], d.Limiters[1]
	if api.Kind != inspect.KindTokenBucket || api.Rate != 500 || api.IntervalMS != 2 || api.PerSecond != 500 || api.App != p+"rl:api" {
		t.Errorf("rl:api = %+v", api)
	}
	// 10 stored plus at most a few ms of refill at 2 ms per permit.
	if api.Available < 10 || api.Available > 500 {
		t.Errorf("rl:api Available = %d, want 10..500", api.Available)
	}
	// 5 s idle at 1 permit/s refills 5 of 20.
	if slow.Available < 5 || slow.Available > 20 {
		t.Errorf("rl:slow Available = %d, want 5..20", slow.Available)
	}

	// MATCH narrows the pass.
	d, err = Discover(ctx, c, p+"rl:*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != 0 || len(d.Limiters) != 2 {
		t.Errorf("Discover(rl:*) = %d locks %d limiters, want 0 and 2", len(d.Locks), len(d.Limiters))
	}
	d, err = Discover(ctx, c, p+"lock:o*")
	if err != nil || len(d.Locks) != 1 || d.Locks[0].Name != p+"lock:orders" {
		t.Errorf("Discover(lock:o*) = %+v, %v", d, err)
	}
	d, err = Discover(ctx, c, p+"*")
	if err != nil || len(d.Limiters) != 2 || d.Limiters[0].Name != p+"rl:api" {
		t.Errorf("Discover(*) limiters = %+v, %v", d, err)
	}
}

// Keys in lockwarden's own namespace are never objects, whatever they hold.
func TestDiscoverSkipsInternalKeys(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	c := inspect.New(redistest.UniversalFor(t, rdb), nil)
	key := wire.StatsKey(p + "orders")
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	inspecttest.Lock(t, rdb, key, "1", 1)

	d, err := Discover(ctx, c, "lw:{*"+p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks)+len(d.Limiters) != 0 {
		t.Fatalf("internal key listed: %+v", d)
	}
	// The key does match that pattern, so the test would see it otherwise.
	if keys := inspecttest.Scan(t, rdb, "lw:{*"+p+"*"); len(keys) != 1 {
		t.Fatalf("sanity: SCAN found %v", keys)
	}
}

// More keys than one SCAN page and one pipeline batch.
func TestDiscoverManyKeysInBatches(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	inspecttest.Cleanup(t, rdb, p)
	c := inspect.New(redistest.UniversalFor(t, rdb), nil)

	const nLocks, nBuckets, nNoise = 1300, 1100, 900
	pipe := rdb.Pipeline()
	for i := 0; i < nLocks; i++ {
		k := fmt.Sprintf("%sl:%05d", p, i)
		pipe.HSet(ctx, k, inspecttest.HolderUUID+":"+strconv.Itoa(i), 1)
		pipe.PExpire(ctx, k, time.Minute)
	}
	for i := 0; i < nBuckets; i++ {
		pipe.HSet(ctx, fmt.Sprintf("%sb:%05d", p, i), "last_mill_second", 0, "stored_permits", 1,
			"max_permits", 10, "interval", 100, "app", "x")
	}
	for i := 0; i < nNoise; i++ {
		pipe.HSet(ctx, fmt.Sprintf("%sn:%05d", p, i), "field", i)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := Discover(ctx, c, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != nLocks || len(d.Limiters) != nBuckets {
		t.Fatalf("found %d locks %d limiters, want %d %d", len(d.Locks), len(d.Limiters), nLocks, nBuckets)
	}
	for i, l := range d.Locks {
		if want := fmt.Sprintf("%sl:%05d", p, i); l.Name != want {
			t.Fatalf("Locks[%d] = %q, want %q (sorted, no duplicates)", i, l.Name, want)
		}
	}
}

func TestDiscoverTruncates(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10k keys")
	}
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	inspecttest.Cleanup(t, rdb, p)
	c := inspect.New(redistest.UniversalFor(t, rdb), nil)

	pipe := rdb.Pipeline()
	for i := 0; i < MaxDiscovered+5; i++ {
		k := p + "l:" + strconv.Itoa(i)
		pipe.HSet(ctx, k, inspecttest.HolderUUID+":1", 1)
		pipe.PExpire(ctx, k, time.Minute)
	}
	pipe.HSet(ctx, p+"bucket", "last_mill_second", 0, "stored_permits", 1, "max_permits", 10, "interval", 100, "app", "x")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := Discover(ctx, c, p+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != MaxDiscovered || !d.LocksTruncated {
		t.Errorf("locks = %d truncated=%v, want %d true", len(d.Locks), d.LocksTruncated, MaxDiscovered)
	}
	if len(d.Limiters) != 1 || d.LimitersTruncated {
		t.Errorf("limiters = %d truncated=%v, want 1 false", len(d.Limiters), d.LimitersTruncated)
	}
}

func TestDiscoverFailsWhenRedisIsDown(t *testing.T) {
	srv := redistest.StartT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := Discover(ctx, inspect.New(rdb, nil), ""); err == nil {
		t.Fatal("Discover against a stopped server returned no error")
	}
}

// discRanges are the slots of each master of the test cluster.
var discRanges = [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}

// discCluster starts a three-master Redis Cluster on private servers and
// returns a client for it, or skips when the servers cannot form one.
func discCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	ctx := context.Background()
	var addrs []string
	var nodes []*redis.Client
	for _, r := range discRanges {
		srv := redistest.StartT(t, "--cluster-enabled", "yes", "--cluster-node-timeout", "5000")
		n := redistest.NewClient(t, srv)
		if err := n.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", r[0], r[1]).Err(); err != nil {
			t.Fatalf("ADDSLOTSRANGE: %v", err)
		}
		addrs = append(addrs, srv.Addr)
		nodes = append(nodes, n)
	}
	for _, addr := range addrs[1:] {
		host, port, _ := strings.Cut(addr, ":")
		if err := nodes[0].Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
			t.Fatalf("CLUSTER MEET: %v", err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range nodes {
		for {
			info, err := n.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster did not form within 30s: %s %v", info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// On a Cluster every master is scanned and each read pipeline goes to the
// node that owns its keys.
func TestDiscoverCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	ctx := context.Background()
	cc := discCluster(t)
	c := inspect.New(cc, nil)

	var wantLocks, wantLims []string
	slots := map[int]bool{}
	for i := 0; i < 30; i++ {
		lock := fmt.Sprintf("lock:%02d", i)
		lim := fmt.Sprintf("rl:%02d", i)
		inspecttest.Lock(t, cc, lock, "1", 1)
		inspecttest.Bucket(t, cc, lim, 0, 1, 10, "100")
		cc.HSet(ctx, fmt.Sprintf("app:%02d", i), "user:1", 1)
		wantLocks = append(wantLocks, lock)
		wantLims = append(wantLims, lim)
		slot, node := int(wire.Slot(lock)), 0
		for node < len(discRanges)-1 && slot > discRanges[node][1] {
			node++
		}
		slots[node] = true
	}
	if len(slots) != 3 {
		t.Fatalf("test keys cover %d of 3 masters", len(slots))
	}
	d, err := Discover(ctx, c, "")
	if err != nil {
		t.Fatal(err)
	}
	var locks, lims []string
	for _, l := range d.Locks {
		locks = append(locks, l.Name)
	}
	for _, l := range d.Limiters {
		lims = append(lims, l.Name)
	}
	if fmt.Sprint(locks) != fmt.Sprint(wantLocks) || fmt.Sprint(lims) != fmt.Sprint(wantLims) {
		t.Fatalf("Discover on cluster: locks %v limiters %v", locks, lims)
	}

	// inspect.Sample spans the nodes too, stats rings included (same slot as the
	// object, so a script could write them).
	for _, name := range []string{"lock:00", "rl:07"} {
		if wire.Slot(wire.StatsKey(name)) != wire.Slot(name) {
			t.Fatalf("wire.StatsKey(%q) in another slot", name)
		}
	}
	s, err := c.Sample(ctx, wantLocks, append(wantLims, "rl:gone"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Locks) != len(wantLocks) || len(s.Limiters) != len(wantLims) || len(s.Stats) != 61 {
		t.Fatalf("Sample on cluster: %d locks %d limiters %d stats", len(s.Locks), len(s.Limiters), len(s.Stats))
	}
}
