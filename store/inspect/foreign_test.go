package inspect_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/conv"
	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// Conventions driven by their real clients (inspecttest.Node, PHP,
// Python): each is listed by the console's walk with its kind and holder
// facts, broken or reset through the console, and then taken by the
// library itself.

// Symfony Lock's RedisStore through phpredis: an exclusive lock and a
// shared one (two readers), then a new Symfony holder takes the lock the
// console broke.
func TestForeignSymfonyLock(t *testing.T) {
	php := inspecttest.PHP(t)
	insp, rdb, prefix := convEnv(t, inspect.ObjectPatterns{})
	ctx := t.Context()
	addr := redistest.Shared(t).Addr
	exclusive, shared := prefix+"invoice-publication", prefix+"report-cache"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), exclusive, shared) })
	php.Call(t, "connect", map[string]any{"addr": addr})
	if e := php.Call(t, "acquire", map[string]any{"resource": exclusive, "id": "a"}); e.Data["acquired"] != true {
		t.Fatalf("Symfony did not take %s: %v", exclusive, e.Data)
	}
	for _, id := range []string{"r1", "r2"} {
		if e := php.Call(t, "acquire", map[string]any{"resource": shared, "id": id, "shared": true}); e.Data["acquired"] != true {
			t.Fatalf("Symfony reader %s: %v", id, e.Data)
		}
	}
	// A Sorted set of another library under the same prefix is no lock.
	rdb.ZAdd(ctx, prefix+"leaderboard", redis.Z{Score: 1700000000000, Member: "player-1"})
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), prefix+"leaderboard") })

	f := walkFind(t, insp, prefix+"*")
	l := f.lock(t, exclusive, inspect.KindSymfonyLock)
	if l.Mode != "write" || len(l.Holders) != 1 || l.PTTL <= 0 || l.Holders[0].LeaseMS <= 0 {
		t.Errorf("exclusive lock %+v", l)
	}
	if r := f.lock(t, shared, inspect.KindSymfonyLock); r.Mode != "read" || len(r.Holders) != 2 {
		t.Errorf("shared lock %+v", r)
	}
	f.none(t, prefix+"leaderboard")

	if e := php.Call(t, "acquire", map[string]any{"resource": exclusive, "id": "b"}); e.Data["acquired"] != false {
		t.Fatal("a second Symfony holder took a held lock")
	}
	must(t, insp.ForceUnlock(ctx, exclusive, l.Holders[0].ID))
	if e := php.Call(t, "acquire", map[string]any{"resource": exclusive, "id": "b"}); e.Data["acquired"] != true {
		t.Fatalf("Symfony could not take the lock the console broke: %v", e.Data)
	}
	php.Call(t, "release", map[string]any{"id": "b"})
	for _, id := range []string{"r1", "r2"} {
		php.Call(t, "release", map[string]any{"id": id})
	}
}

// bottleneck with its Redis datastore: a reservoir of one a minute; the
// second job waits until the console refills it, then runs at once.
func TestForeignBottleneck(t *testing.T) {
	node := inspecttest.Node(t)
	insp, rdb, prefix := convEnv(t, inspect.ObjectPatterns{})
	ctx := t.Context()
	id := sanitize(prefix) + "-mailer"
	settings := "b_" + id + "_settings"
	t.Cleanup(func() {
		c := context.WithoutCancel(ctx)
		for _, k := range rdb.Keys(c, "b_"+id+"_*").Val() {
			rdb.Del(c, k)
		}
	})
	node.Run(t, "bottleneck", map[string]any{"addr": redistest.Shared(t).Addr, "id": id})
	if e := node.Expect(t, "ran", 20*time.Second); e.Data["n"] != 1.0 {
		t.Fatalf("first job: %v", e.Data)
	}

	f := walkFind(t, insp, "b_"+id+"_*")
	l := f.limiter(t, settings, inspect.KindBottleneck)
	if l.Rate != 1 || l.IntervalMS != 60000 || l.Available != 0 || l.Facts["reservoir"] != "0" || l.Facts["channel"] != "b_"+id {
		t.Errorf("limiter %+v", l)
	}
	if text, ok := l.DescribeReset(); !ok || !strings.Contains(text, "b_"+id) {
		t.Errorf("reset says %q, %v", text, ok)
	}
	must(t, insp.ResetCounter(ctx, settings))
	if e := node.Expect(t, "ran", 20*time.Second); e.Data["n"] != 2.0 {
		t.Fatalf("second job after the reset: %v", e.Data)
	}
}

// express-rate-limit with rate-limit-redis: an app admitting two requests a
// minute; the console reads the client's counter as a member of the
// express-rate-limit family, shows it on its own and resets it, and the
// client is admitted again.
func TestForeignExpressRateLimit(t *testing.T) {
	node := inspecttest.Node(t)
	prefix := redistest.Prefix(t)
	insp, rdb, _ := convEnv(t, inspect.ObjectPatterns{Counters: []inspect.CounterRule{{Pattern: "rl:" + prefix + "limited*", Limit: 2, Window: time.Minute}}})
	ctx := t.Context()
	key := prefix + "limited-client"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), "rl:"+key) })
	node.Run(t, "express", map[string]any{"addr": redistest.Shared(t).Addr, "key": key, "limit": 2})
	port := node.Expect(t, "listening", 20*time.Second).Data["port"]
	url := fmt.Sprintf("http://127.0.0.1:%v/", port)
	get := func() int {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, want := range []int{200, 200, 429} {
		if got := get(); got != want {
			t.Fatalf("request %d: %d, want %d", i+1, got, want)
		}
	}

	f := walkFind(t, insp, "rl:"+prefix+"*")
	f.none(t, "rl:"+key) // a family's member, not a limiter a client
	fam := inspect.Family{ID: inspect.ExpressFamilyID, Kind: inspect.FamilyExpress}
	if fams := insp.Families(nil); !slices.Contains(fams, fam) || !fam.Member("rl:"+key) {
		t.Fatalf("families %+v, want %+v", fams, fam)
	}
	rd := readFamily(t, insp, "rl:"+prefix+"*", fam)["rl:"+key]
	if rd.Count != 3 || rd.ID != key || rd.TTL <= 0 {
		t.Errorf("member %+v", rd)
	}
	l, err := insp.GetLimiter(ctx, "rl:"+key)
	must(t, err)
	if l.Kind != inspect.KindExpressRateLimit || l.Count != 3 || !l.LimitKnown || l.Limit != 2 || l.Available != 0 || l.TTL <= 0 || l.TTL > time.Minute {
		t.Errorf("limiter %+v", l)
	}
	must(t, insp.ResetCounter(ctx, "rl:"+key))
	if got := get(); got != 200 {
		t.Fatalf("after the reset: %d, want 200", got)
	}
}

// BullMQ: a worker takes a job and hangs; the console lists the job's lock
// with its job, queue and worker, breaks it, and a second worker finds the
// job stalled and runs it.
func TestForeignBullMQ(t *testing.T) {
	node := inspecttest.Node(t)
	insp, rdb, prefix := convEnv(t, inspect.ObjectPatterns{})
	ctx := t.Context()
	bull := prefix + "bull"
	t.Cleanup(func() {
		c := context.WithoutCancel(ctx)
		for _, k := range rdb.Keys(c, bull+":*").Val() {
			rdb.Del(c, k)
		}
	})
	node.Run(t, "bullmq", map[string]any{"addr": redistest.Shared(t).Addr, "prefix": bull, "queue": "reports"})
	active := node.Expect(t, "active", 30*time.Second)
	name := fmt.Sprintf("%s:reports:%v:lock", bull, active.Data["id"])

	f := walkFind(t, insp, bull+":*")
	l := f.lock(t, name, inspect.KindBullMQJobLock)
	h := l.Holders[0]
	if h.ID != active.Data["token"] || h.Facts[conv.FactQueue] != bull+":reports" || h.Facts["job_name"] != "nightly-report" ||
		h.AcquiredMS == 0 || l.PTTL <= 0 {
		t.Errorf("lock %+v, holder %+v", l, h)
	}
	if len(f.locks) != 1 {
		t.Errorf("the walk listed %d locks among BullMQ's keys, want the job's lock alone: %v", len(f.locks), f.locks)
	}
	if plan := l.ForceUnlockPlan(h.ID); !strings.Contains(plan.Summary, "stalled") {
		t.Errorf("the plan does not warn of the stalled retry: %q", plan.Summary)
	}
	must(t, insp.ForceUnlock(ctx, name, h.ID))
	node.Signal(t, "rescue")
	if e := node.Expect(t, "reprocessed", 30*time.Second); e.Data["id"] != active.Data["id"] {
		t.Fatalf("reprocessed %v, want job %v", e.Data, active.Data["id"])
	}
}

// redlock (v4): its lock is a SET NX PX token string, a token lock under
// a pattern; after the console's force-unlock redlock takes it again.
func TestForeignRedlock(t *testing.T) {
	node := inspecttest.Node(t)
	prefix := redistest.Prefix(t)
	insp, rdb, _ := convEnv(t, inspect.ObjectPatterns{TokenLocks: []string{prefix + "locks:*"}})
	ctx := t.Context()
	name := prefix + "locks:orders"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name) })
	node.Run(t, "redlock", map[string]any{"addr": redistest.Shared(t).Addr, "resource": name})
	value := node.Expect(t, "locked", 20*time.Second).Data["value"]

	l, err := insp.GetLock(ctx, name)
	must(t, err)
	if l.Kind != inspect.KindTokenLock || l.Holders[0].ID != value {
		t.Fatalf("GetLock = %+v, want a token lock held by %v", l, value)
	}
	f := walkFind(t, insp, prefix+"locks:*")
	f.lock(t, name, inspect.KindTokenLock)
	must(t, insp.ForceUnlock(ctx, name, l.Holders[0].ID))
	node.Signal(t, "retry")
	node.Expect(t, "relocked", 20*time.Second)
}

// ioredis on its own, writing an INCR+PEXPIRE access counter.
func TestForeignIoredisCounter(t *testing.T) {
	node := inspecttest.Node(t)
	prefix := redistest.Prefix(t)
	insp, rdb, _ := convEnv(t, inspect.ObjectPatterns{Counters: []inspect.CounterRule{{Pattern: prefix + "hits:*", Limit: 10, Window: time.Minute}}})
	key := prefix + "hits:10.0.0.9"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(t.Context()), key) })
	node.Run(t, "ioredis", map[string]any{"addr": redistest.Shared(t).Addr, "key": key, "hits": 4})
	node.Expect(t, "counted", 20*time.Second)
	l, err := insp.GetLimiter(t.Context(), key)
	must(t, err)
	if l.Kind != inspect.KindCounter || l.Count != 4 || l.Available != 6 {
		t.Errorf("counter %+v", l)
	}
}

// redis-semaphore: its Mutex is a token lock under a pattern; its
// Semaphore, a sorted set of holder ids, is not taken for a Symfony lock.
func TestForeignRedisSemaphore(t *testing.T) {
	node := inspecttest.Node(t)
	prefix := redistest.Prefix(t)
	insp, rdb, _ := convEnv(t, inspect.ObjectPatterns{TokenLocks: []string{"mutex:" + prefix + "*"}})
	ctx := t.Context()
	mutex, sem := prefix+"billing", prefix+"exports"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), "mutex:"+mutex, "semaphore:"+sem) })
	node.Run(t, "semaphore", map[string]any{"addr": redistest.Shared(t).Addr, "mutex": mutex, "semaphore": sem})
	held := node.Expect(t, "held", 20*time.Second)

	f := walkFind(t, insp, "*"+prefix+"*")
	if l := f.lock(t, "mutex:"+mutex, inspect.KindTokenLock); l.Holders[0].ID != held.Data["mutex"] {
		t.Errorf("mutex %+v, want held by %v", l, held.Data["mutex"])
	}
	f.none(t, "semaphore:"+sem)
	must(t, insp.ForceUnlock(ctx, "mutex:"+mutex, fmt.Sprint(held.Data["mutex"])))
	node.Signal(t, "retry")
	if e := node.Expect(t, "retried", 20*time.Second); e.Data["acquired"] != true {
		t.Errorf("redis-semaphore could not take the mutex the console broke: %v", e.Data)
	}
}

// rate-limiter-flexible's RateLimiterRedis: an access counter per key.
func TestForeignRateLimiterFlexible(t *testing.T) {
	node := inspecttest.Node(t)
	prefix := redistest.Prefix(t)
	keyPrefix := prefix + "rlflx"
	insp, rdb, _ := convEnv(t, inspect.ObjectPatterns{Counters: []inspect.CounterRule{{Pattern: keyPrefix + ":*", Limit: 5, Window: time.Minute}}})
	t.Cleanup(func() {
		c := context.WithoutCancel(t.Context())
		for _, k := range rdb.Keys(c, keyPrefix+":*").Val() {
			rdb.Del(c, k)
		}
	})
	node.Run(t, "flexible", map[string]any{"addr": redistest.Shared(t).Addr, "keyPrefix": keyPrefix, "key": "user-3", "consume": 2})
	key := fmt.Sprint(node.Expect(t, "consumed", 20*time.Second).Data["key"])
	f := walkFind(t, insp, keyPrefix+":*")
	if l, ok := f.lims[key]; !ok || l.Kind != inspect.KindCounter || l.Count != 2 || l.Available != 3 {
		t.Errorf("rate-limiter-flexible's counter %s: %+v (found %v)", key, l, ok)
	}
}

// redis-py's Lock: a token lock under a pattern; after the console's
// force-unlock, redis-py takes it again.
func TestForeignRedisPy(t *testing.T) {
	py := inspecttest.Python(t)
	prefix := redistest.Prefix(t)
	insp, rdb, _ := convEnv(t, inspect.ObjectPatterns{TokenLocks: []string{prefix + "pylock:*"}})
	ctx := t.Context()
	name := prefix + "pylock:ledger"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name) })
	py.Call(t, "connect", map[string]any{"addr": redistest.Shared(t).Addr})
	first := py.Call(t, "acquire", map[string]any{"name": name, "id": "a"})
	if first.Data["acquired"] != true {
		t.Fatalf("redis-py: %v", first.Data)
	}
	f := walkFind(t, insp, prefix+"pylock:*")
	l := f.lock(t, name, inspect.KindTokenLock)
	if l.Holders[0].ID != first.Data["token"] {
		t.Errorf("holder %+v, want redis-py's token %v", l.Holders[0], first.Data["token"])
	}
	if e := py.Call(t, "acquire", map[string]any{"name": name, "id": "b"}); e.Data["acquired"] != false {
		t.Fatal("redis-py took a held lock")
	}
	must(t, insp.ForceUnlock(ctx, name, l.Holders[0].ID))
	if e := py.Call(t, "acquire", map[string]any{"name": name, "id": "b"}); e.Data["acquired"] != true {
		t.Fatalf("redis-py could not take the lock the console broke: %v", e.Data)
	}
	py.Call(t, "release", map[string]any{"id": "b"})
}
