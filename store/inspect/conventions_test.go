package inspect_test

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/conv"
	"github.com/lockwarden/lockwarden/store/inspect/family"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// Framework conventions whose library no registry here carries, written
// byte for byte as that library's code writes them (each test names the
// file), then found by the console's walk, shown with their holder facts,
// and broken or reset so the library sees them free.

// found is what a walk listed, by name.
type found struct {
	locks map[string]inspect.LockInfo
	lims  map[string]inspect.LimiterInfo
	ticks int
}

// walkFind walks the keys matching match as the console does (200 ms
// ticks, a pass of a second) until a pass has ended and its last page is
// classified, bounded; ticks says how many it took. With string patterns
// the console runs full passes instead, and so does walkFind.
func walkFind(t *testing.T, insp *inspect.Inspector, match string) found {
	t.Helper()
	w, err := walk.New(insp, match, &walk.Options{Tick: 200 * time.Millisecond, Pass: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	f := found{locks: map[string]inspect.LockInfo{}, lims: map[string]inspect.LimiterInfo{}}
	if !w.Scans() {
		d, err := w.Discover(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range d.Locks {
			f.locks[l.Name] = l
		}
		for _, l := range d.Limiters {
			f.lims[l.Name] = l
		}
		return f
	}
	var locks, lims []string
	drain := -1
	for ; f.ticks < 200 && drain != 0; f.ticks++ {
		s, err := w.Tick(t.Context(), locks, lims)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range s.Walk.Locks {
			locks, f.locks[l.Name] = append(locks, l.Name), l
		}
		for _, l := range s.Walk.Limiters {
			lims, f.lims[l.Name] = append(lims, l.Name), l
		}
		for _, l := range s.Locks {
			f.locks[l.Name] = l
		}
		for _, l := range s.Limiters {
			f.lims[l.Name] = l
		}
		switch {
		case drain > 0:
			drain--
		case drain < 0 && s.Walk.PassEnded:
			drain = walk.ClassifiedAfter
		}
	}
	if drain != 0 {
		t.Fatalf("no pass over %s ended in %d ticks", match, f.ticks)
	}
	return f
}

// lock is the lock a walk found at name with kind, or fails.
func (f found) lock(t *testing.T, name string, kind inspect.Kind) inspect.LockInfo {
	t.Helper()
	l, ok := f.locks[name]
	if !ok || l.Kind != kind {
		t.Fatalf("the walk listed %s as %+v (found %v), want a %s", name, l, ok, kind)
	}
	if inspect.IsConvention(kind) && l.Recognised == "" {
		t.Errorf("%s: no reason it was recognised", name)
	}
	return l
}

func (f found) limiter(t *testing.T, name string, kind inspect.Kind) inspect.LimiterInfo {
	t.Helper()
	l, ok := f.lims[name]
	if !ok || l.Kind != kind {
		t.Fatalf("the walk listed %s as %+v (found %v), want a %s", name, l, ok, kind)
	}
	if l.Recognised == "" {
		t.Errorf("%s: no reason it was recognised", name)
	}
	return l
}

// none fails if the walk listed any of names.
func (f found) none(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if l, ok := f.locks[n]; ok {
			t.Errorf("decoy %s listed as a lock: %+v", n, l)
		}
		if l, ok := f.lims[n]; ok {
			t.Errorf("decoy %s listed as a limiter: %+v", n, l)
		}
	}
}

func convEnv(t *testing.T, p inspect.ObjectPatterns) (*inspect.Inspector, *redis.Client, string) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t)
	return inspect.New(redistest.UniversalFor(t, rdb), &inspect.Options{Patterns: p}), rdb, prefix
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func randomBase64(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sanitize makes a test's prefix usable inside another library's key part.
func sanitize(prefix string) string {
	return strings.NewReplacer(":", "-", "/", "-").Replace(strings.TrimSuffix(strings.ToLower(prefix), ":"))
}

// ShedLock's Redis providers: InternalRedisLockProvider (providers/redis/
// shedlock-support-redis) buildKey "<prefix>:<env>:<name>" with prefix
// "job-lock", buildValue "ADDED:<ISO instant, 3 digits>@<host>:<uuid>",
// SET NX PX lockAtMostFor; its unlock before lockAtLeastFor moves the
// expiry earlier under the same value (SET XX PX).
func TestConventionShedLock(t *testing.T) {
	insp, rdb, prefix := convEnv(t, inspect.ObjectPatterns{})
	ctx := t.Context()
	env := sanitize(prefix)
	name, old, decoy := "job-lock:"+env+":nightly-report", "job-lock:"+env+":before-6.7", "job-lock:"+env+":cached"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name, old, decoy) })
	added := time.Now().UTC().Add(-3 * time.Second).Truncate(time.Millisecond)
	value := fmt.Sprintf("ADDED:%s@worker-3.example:%s", added.Format("2006-01-02T15:04:05.000Z"), "9b2d6f4e-1c3a-4e5b-8f7d-0a1b2c3d4e5f")
	must(t, rdb.SetArgs(ctx, name, value, redis.SetArgs{Mode: "NX", TTL: 10 * time.Minute}).Err())
	must(t, rdb.Set(ctx, old, "ADDED:"+added.Format("2006-01-02T15:04:05.000Z")+"@legacy-host", time.Minute).Err())
	must(t, rdb.Set(ctx, decoy, "ADDED: nothing to see", time.Minute).Err())

	f := walkFind(t, insp, "job-lock:"+env+":*")
	l := f.lock(t, name, inspect.KindShedLock)
	h := l.Holders[0]
	if h.ID != value || h.Facts[conv.FactHost] != "worker-3.example" || h.AcquiredMS != added.UnixMilli() ||
		!strings.HasPrefix(h.Facts[conv.FactState], "running") || !strings.HasPrefix(h.Facts[conv.FactLayout], "6.7.0 or later") {
		t.Errorf("holder %+v", h)
	}
	if o := f.lock(t, old, inspect.KindShedLock); o.Holders[0].Facts[conv.FactHost] != "legacy-host" ||
		!strings.HasPrefix(o.Holders[0].Facts[conv.FactLayout], "before 6.7.0") {
		t.Errorf("a value without the uuid: %+v", o.Holders[0])
	}
	f.none(t, decoy)

	// The task ends before lockAtLeastFor: the same value, an earlier expiry.
	must(t, rdb.SetArgs(ctx, name, value, redis.SetArgs{Mode: "XX", TTL: 30 * time.Second}).Err())
	s, err := insp.Sample(ctx, []string{name}, nil)
	must(t, err)
	if len(s.Locks) != 1 || !strings.HasPrefix(s.Locks[0].Holders[0].Facts[conv.FactState], "finished") {
		t.Errorf("after its unlock kept it for lockAtLeastFor: %+v", s.Locks)
	}

	must(t, insp.ForceUnlock(ctx, name, value))
	// ShedLock on another node: its SET NX succeeds, the lock is free.
	if ok, err := rdb.SetNX(ctx, name, "ADDED:"+time.Now().UTC().Format("2006-01-02T15:04:05.000Z")+"@worker-4:x", time.Minute).Result(); err != nil || !ok {
		t.Fatalf("another node's SET NX after the force-unlock: %v %v", ok, err)
	}
	if err := insp.ForceUnlock(ctx, name, value); !errors.Is(err, inspect.ErrHolderChanged) {
		t.Errorf("a force-unlock of the old value once another node holds it: %v", err)
	}
}

// python-redis-lock (src/redis_lock/__init__.py): Lock names the key
// "lock:<name>" and the waiters' list "lock-signal:<name>", its id is
// b64encode(urandom(18)), acquire is SET NX [EX] and, when taken, BLPOP on
// the signal list; UNLOCK_SCRIPT deletes the list, pushes one element,
// PEXPIREs it signal_expire (1000 ms) and deletes the lock.
func TestConventionPythonRedisLock(t *testing.T) {
	insp, rdb, prefix := convEnv(t, inspect.ObjectPatterns{})
	ctx := t.Context()
	// The name in a hash tag keeps the lock and its signal list in one
	// slot, as python-redis-lock needs on a Cluster.
	name, signal := "lock:{"+prefix+"invoices}", "lock-signal:{"+prefix+"invoices}"
	decoys := []string{"lock:{" + prefix + "flag}", "lock:{" + prefix + "sentence}"}
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), append(decoys, name, signal)...) })
	id := randomBase64(18)
	must(t, rdb.SetNX(ctx, name, id, 0).Err()) // no expire: the default
	must(t, rdb.Set(ctx, decoys[0], "enabled", 0).Err())
	must(t, rdb.Set(ctx, decoys[1], "not an id, just 24 chars", 0).Err())

	f := walkFind(t, insp, "lock:{"+prefix+"*")
	l := f.lock(t, name, inspect.KindPyRedisLock)
	if l.PTTL >= 0 || l.Holders[0].ID != id || l.Holders[0].Facts[conv.FactState] == "" {
		t.Errorf("lock %+v", l)
	}
	f.none(t, decoys...)

	// A waiter as python-redis-lock's acquire: BLPOP, then SET NX again.
	waiter := redistest.Client(t)
	woke := make(chan error, 1)
	go func() {
		if err := waiter.BLPop(ctx, 20*time.Second, signal).Err(); err != nil {
			woke <- err
			return
		}
		ok, err := waiter.SetNX(ctx, name, randomBase64(18), 0).Result()
		if err == nil && !ok {
			err = errors.New("SET NX refused after the signal")
		}
		woke <- err
	}()
	redistest.Eventually(t, "the waiter blocks", func() bool {
		return strings.Contains(rdb.ClientList(ctx).Val(), "cmd=blpop")
	})
	plan := l.ForceUnlockPlan(id)
	if !strings.Contains(plan.Summary, signal) {
		t.Errorf("plan %q does not name the signal list", plan.Summary)
	}
	must(t, insp.ForceUnlock(ctx, name, id))
	select {
	case err := <-woke:
		must(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter blocked on the signal list did not wake")
	}
}

// Laravel (src/Illuminate/Cache/RedisLock.php acquire: SET <prefix><name>
// <owner> EX <seconds> NX; Lock.php: owner Str::random() of 16; prefixes
// from config/database.php and config/cache.php: Str::slug(APP_NAME) with
// "-database-" and "-cache-"; Laravel 10's RedisStore added ':' after
// "<app>_cache"; Console/Scheduling/Event.php mutexName
// "framework/schedule-<sha1>"; CacheEventMutex locks it for expiresAt
// minutes, 1440 by default). Redis/Limiters/DurationLimiter.php: HMSET
// start, end, count and EXPIRE twice the decay.
func TestConventionLaravel(t *testing.T) {
	app := "lw-" + sanitize(redistest.Prefix(t))
	app = strings.ReplaceAll(app, "_", "-")
	insp, rdb, _ := convEnv(t, inspect.ObjectPatterns{LaravelPrefixes: []string{"shop:" + app + ":"}})
	ctx := t.Context()
	owner := func() string { return "Ab3" + randomHex(7)[:13] }
	sha := sha1.Sum([]byte("* * * * *php artisan reports:nightly"))
	sched := app + "-database-" + app + "-cache-framework/schedule-" + hex.EncodeToString(sha[:])
	legacy := strings.ReplaceAll(app, "-", "_") + "_database_" + strings.ReplaceAll(app, "-", "_") + "_cache:invoice-42"
	custom := "shop:" + app + ":import"
	throttle := app + "-database-api-throttle"
	cachedString, cachedNumber := app+"-database-"+app+"-cache-greeting", app+"-database-"+app+"-cache-visits"
	all := []string{sched, legacy, custom, throttle, cachedString, cachedNumber}
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), all...) })
	schedOwner := owner()
	must(t, rdb.SetArgs(ctx, sched, schedOwner, redis.SetArgs{Mode: "NX", TTL: 86400 * time.Second}).Err())
	must(t, rdb.SetArgs(ctx, legacy, owner(), redis.SetArgs{Mode: "NX", TTL: 60 * time.Second}).Err())
	must(t, rdb.SetArgs(ctx, custom, owner(), redis.SetArgs{Mode: "NX", TTL: 60 * time.Second}).Err())
	now := time.Now().Unix()
	must(t, rdb.HSet(ctx, throttle, "start", now, "end", now+60, "count", 4).Err())
	must(t, rdb.Expire(ctx, throttle, 120*time.Second).Err())
	must(t, rdb.Set(ctx, cachedString, `s:16:"abcdefghijklmnop";`, time.Minute).Err())
	must(t, rdb.Set(ctx, cachedNumber, "1234567890123456", time.Minute).Err())

	f := walkFind(t, insp, "*"+strings.ToLower(t.Name())+"*")
	l := f.lock(t, sched, inspect.KindLaravelLock)
	if l.Holders[0].ID != schedOwner || l.Holders[0].Facts[conv.FactLayout] != "scheduler withoutOverlapping()" ||
		!strings.Contains(l.Recognised, "withoutOverlapping") || l.PTTL < 86000*time.Second {
		t.Errorf("scheduler mutex %+v", l)
	}
	if l := f.lock(t, legacy, inspect.KindLaravelLock); l.Holders[0].Facts[conv.FactLayout] != "Cache::lock" {
		t.Errorf("Laravel 10 cache lock %+v", l)
	}
	f.lock(t, custom, inspect.KindLaravelLock)
	th := f.limiter(t, throttle, inspect.KindLaravelThrottle)
	if th.Count != 4 || th.IntervalMS != 60000 || th.TTL <= 0 || th.Facts[conv.FactLimit] == "" {
		t.Errorf("throttle %+v", th)
	}
	f.none(t, cachedString, cachedNumber)

	// The scheduler's next run: its lock acquire succeeds once broken.
	must(t, insp.ForceUnlock(ctx, sched, schedOwner))
	if ok, err := rdb.SetNX(ctx, sched, owner(), time.Hour).Result(); err != nil || !ok {
		t.Fatalf("the next run's acquire after the force-unlock: %v %v", ok, err)
	}
	must(t, insp.ResetCounter(ctx, throttle))
	if n := rdb.Exists(ctx, throttle).Val(); n != 0 {
		t.Error("the throttle's window survived its reset")
	}
}

// sidekiq-unique-jobs: lib/sidekiq_unique_jobs/lua/lock.lua (v9: HSET
// "<digest>:LOCKED" job_id metadata-JSON, ZADD "uniquejobs:digests"; v8:
// HSET job_id current_time, ZADD digests or expiring_digests, keys
// "<digest>:QUEUED", ":PRIMED", ":INFO"); unlock.lua (v8) LPUSHes "1" on
// QUEUED so a waiting job's BRPOPLPUSH wakes.
func TestConventionSidekiqUniqueJobs(t *testing.T) {
	insp, rdb, prefix := convEnv(t, inspect.ObjectPatterns{})
	ctx := t.Context()
	v9, v8 := prefix+"uniquejobs:"+randomHex(16), prefix+"uniquejobs:"+randomHex(16)
	jid9, jid8 := randomHex(12), randomHex(12)
	decoy := prefix + "app:LOCKED"
	t.Cleanup(func() {
		c := context.WithoutCancel(ctx)
		rdb.Del(c, v9+":LOCKED", v8+":LOCKED", v8, v8+":INFO", v8+":QUEUED", v8+":PRIMED", decoy)
		rdb.ZRem(c, "uniquejobs:digests", v9, v8)
	})
	meta, _ := json.Marshal(map[string]any{"worker": "InvoiceJob", "queue": "billing", "limit": 1, "timeout": 0,
		"ttl": nil, "type": "until_executed", "lock_args": []any{42}, "time": float64(time.Now().UnixMilli()) / 1000, "at": nil})
	must(t, rdb.HSet(ctx, v9+":LOCKED", jid9, string(meta)).Err())
	must(t, rdb.ZAdd(ctx, "uniquejobs:digests", redis.Z{Score: float64(time.Now().Unix()), Member: v9}).Err())
	must(t, rdb.HSet(ctx, v8+":LOCKED", jid8, strconv.FormatFloat(float64(time.Now().UnixMilli())/1000, 'f', 6, 64)).Err())
	must(t, rdb.ZAdd(ctx, "uniquejobs:digests", redis.Z{Score: float64(time.Now().Unix()), Member: v8}).Err())
	must(t, rdb.Set(ctx, v8, jid8, 0).Err())
	must(t, rdb.HSet(ctx, decoy, "user", "42").Err())

	f := walkFind(t, insp, prefix+"*")
	l := f.lock(t, v9+":LOCKED", inspect.KindSidekiqUniqueJob)
	if h := l.Holders[0]; h.ID != jid9 || h.Facts[conv.FactWorker] != "InvoiceJob" || h.Facts[conv.FactQueue] != "billing" || h.AcquiredMS == 0 {
		t.Errorf("v9 holder %+v", h)
	}
	if h := f.lock(t, v8+":LOCKED", inspect.KindSidekiqUniqueJob).Holders[0]; h.ID != jid8 || h.AcquiredMS == 0 {
		t.Errorf("v8 holder %+v", h)
	}
	f.none(t, decoy, v8)

	must(t, insp.ForceUnlock(ctx, v9+":LOCKED", jid9))
	if rdb.Exists(ctx, v9+":LOCKED").Val() != 0 || rdb.ZScore(ctx, "uniquejobs:digests", v9).Err() != redis.Nil {
		t.Error("v9: the lock or its digest survived the force-unlock")
	}
	// v8: a job waiting for the lock pops QUEUED (BRPOPLPUSH) and wakes.
	waiter := redistest.Client(t)
	woke := make(chan error, 1)
	go func() { woke <- waiter.BRPopLPush(ctx, v8+":QUEUED", v8+":PRIMED", 20*time.Second).Err() }()
	redistest.Eventually(t, "the job waits", func() bool {
		return strings.Contains(rdb.ClientList(ctx).Val(), "cmd=brpoplpush")
	})
	must(t, insp.ForceUnlock(ctx, v8+":LOCKED", jid8))
	select {
	case err := <-woke:
		must(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the waiting job did not wake")
	}
	if rdb.Exists(ctx, v8+":LOCKED", v8).Val() != 0 || rdb.ZScore(ctx, "uniquejobs:digests", v8).Err() != redis.Nil {
		t.Error("v8: the lock, its digest string or its digest member survived the force-unlock")
	}
}

// Spring Integration's RedisLockRegistry (spring-integration-redis, util/
// RedisLockRegistry.java): OBTAIN_LOCK_SCRIPT SETs "<registryKey>:<path>"
// to the registry's clientId (a UUID) with PX expireAfter; in pub/sub mode
// its waiters listen on "<registryKey>-channel:*" and UNLINK_UNLOCK_SCRIPT
// publishes the lock's key there.
func TestConventionSpringLock(t *testing.T) {
	registry := redistest.Prefix(t) + "orders-registry"
	insp, rdb, _ := convEnv(t, inspect.ObjectPatterns{SpringRegistries: []string{registry}})
	ctx := t.Context()
	name, client := registry+":order-42", "5f0c9a1e-3b7d-4c2e-9a8f-1d2e3f4a5b6c"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name) })
	must(t, rdb.Set(ctx, name, client, 60*time.Second).Err())

	f := walkFind(t, insp, registry+"*")
	l := f.lock(t, name, inspect.KindSpringLock)
	if l.Holders[0].ID != client || l.Channel != registry+"-channel:"+name {
		t.Errorf("lock %+v", l)
	}
	if plain := walkFind(t, inspect.New(rdb, nil), registry+"*"); len(plain.locks) != 0 {
		t.Errorf("without --spring-lock-registry a UUID string was listed: %+v", plain.locks)
	}

	sub := redistest.Client(t).PSubscribe(ctx, registry+"-channel:*")
	t.Cleanup(func() { sub.Close() })
	_, err := sub.Receive(ctx)
	must(t, err)
	must(t, insp.ForceUnlock(ctx, name, client))
	select {
	case m := <-sub.Channel():
		if m.Channel != l.Channel || m.Payload != name {
			t.Errorf("published %q on %q, want the lock's key on %q", m.Payload, m.Channel, l.Channel)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the registry's waiters were not told")
	}
}

// DistributedLock.Redis (src/DistributedLock.Redis/RedLock/RedLockHelper.cs
// CreateLockId: "<MachineName>_<pid>_" + Guid "n"; Primitives/
// RedisMutexPrimitive.cs TryAcquire: SET NX PX expiry, 30 s by default).
func TestConventionDotnetLock(t *testing.T) {
	prefix := redistest.Prefix(t)
	insp, rdb, _ := convEnv(t, inspect.ObjectPatterns{DotnetLocks: []string{prefix + "dist:*"}})
	ctx := t.Context()
	name, decoy := prefix+"dist:payments", prefix+"dist:note"
	value := "BUILD-AGENT-7_4211_" + randomHex(16)
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name, decoy) })
	must(t, rdb.SetArgs(ctx, name, value, redis.SetArgs{Mode: "NX", TTL: 30 * time.Second}).Err())
	must(t, rdb.Set(ctx, decoy, "some_text_here", 30*time.Second).Err())

	f := walkFind(t, insp, prefix+"dist:*")
	h := f.lock(t, name, inspect.KindDotnetLock).Holders[0]
	inspect.AnnotateHolder(nil, &h, time.Time{}, time.Now())
	if h.Facts[conv.FactHost] != "BUILD-AGENT-7" || h.Facts[conv.FactPID] != "4211" || !strings.Contains(h.Who, "BUILD-AGENT-7 (pid 4211)") {
		t.Errorf("holder %+v", h)
	}
	f.none(t, decoy)
	must(t, insp.ForceUnlock(ctx, name, value))
	if ok, _ := rdb.SetNX(ctx, name, "OTHER_1_"+randomHex(16), 30*time.Second).Result(); !ok {
		t.Error("another process's SET NX failed after the force-unlock")
	}
}

// @upstash/ratelimit (src/single.ts: keys "<prefix>:<identifier>:<window
// number>", prefix "@upstash/ratelimit"; src/lua-scripts/single.ts: INCRBY
// and PEXPIRE window (fixed) or window*2+1000 (sliding); the token bucket
// a hash of refilledAt and tokens).
func TestConventionUpstash(t *testing.T) {
	insp, rdb, prefix := convEnv(t, inspect.ObjectPatterns{})
	ctx := t.Context()
	base := "@upstash/ratelimit:" + prefix
	nowMS := redistest.NowMS(t, rdb)
	fixed := base + "user-9:" + strconv.FormatInt(nowMS/60000, 10)
	sliding := base + "user-7:" + strconv.FormatInt(nowMS/10000, 10)
	bucket := base + "user-5"
	dynamic := "@upstash/ratelimit:dynamic:global"
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), fixed, sliding, bucket) })
	must(t, rdb.IncrBy(ctx, fixed, 3).Err())
	must(t, rdb.PExpire(ctx, fixed, 60*time.Second).Err())
	must(t, rdb.IncrBy(ctx, sliding, 2).Err())
	must(t, rdb.PExpire(ctx, sliding, 21*time.Second).Err())
	must(t, rdb.HSet(ctx, bucket, "refilledAt", nowMS, "tokens", 7).Err())

	f := walkFind(t, insp, "@upstash/ratelimit:*")
	l := f.limiter(t, fixed, inspect.KindUpstashRatelimit)
	if l.Count != 3 || l.IntervalMS != 60000 || l.Facts["identifier"] != prefix+"user-9" {
		t.Errorf("fixed window %+v", l)
	}
	if l := f.limiter(t, sliding, inspect.KindUpstashRatelimit); l.Facts[conv.FactLayout] != "sliding window" || l.IntervalMS != 10000 {
		t.Errorf("sliding window %+v", l)
	}
	if l := f.limiter(t, bucket, inspect.KindUpstashRatelimit); l.Available != 7 || l.Facts[conv.FactLayout] != "token bucket" {
		t.Errorf("token bucket %+v", l)
	}
	f.none(t, dynamic)
	must(t, insp.ResetCounter(ctx, fixed))
	must(t, insp.ResetCounter(ctx, bucket))
	if rdb.Exists(ctx, fixed, bucket).Val() != 0 {
		t.Error("a reset left the window or the bucket")
	}
}

// Envoy's ratelimit service (src/limiter/cache_key.go GenerateCacheKey:
// "<prefix><domain>_<key>_<value>_..._<now/divider*divider>";
// src/redis/fixed_cache_impl.go: INCRBY, EXPIRE divider plus jitter). A
// domain's windows are one family, not a limiter a window.
func TestConventionEnvoy(t *testing.T) {
	insp, rdb, prefix := convEnv(t, inspect.ObjectPatterns{})
	ctx := t.Context()
	nowS := redistest.NowMS(t, rdb) / 1000
	minute := prefix + "edge_remote_address_10.0.0.7_" + strconv.FormatInt(nowS/60*60, 10)
	other := prefix + "edge_remote_address_10.0.0.8_" + strconv.FormatInt(nowS/60*60, 10)
	text, forever := prefix+"session_user_42_"+strconv.FormatInt(nowS, 10), prefix+"stats_page_home_"+strconv.FormatInt(nowS/60*60, 10)
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), minute, other, text, forever) })
	must(t, rdb.IncrBy(ctx, minute, 7).Err())
	must(t, rdb.Expire(ctx, minute, (60+17)*time.Second).Err())
	must(t, rdb.IncrBy(ctx, other, 2).Err())
	must(t, rdb.Expire(ctx, other, 60*time.Second).Err())
	must(t, rdb.Set(ctx, text, "abc", time.Minute).Err())
	must(t, rdb.Set(ctx, forever, "12", 0).Err())

	f := walkFind(t, insp, prefix+"*")
	f.none(t, minute, other, text, forever) // windows are read as their domain's family
	var fam *inspect.Family
	for _, fm := range insp.Families(nil) {
		if fm.ID == prefix+"edge" {
			fam = &fm
		}
	}
	if fam == nil || fam.Kind != inspect.FamilyEnvoy || !fam.Member(minute) || fam.Member(text) {
		t.Fatalf("families %+v, want the domain %sedge", insp.Families(nil), prefix)
	}
	read := readFamily(t, insp, prefix+"*", *fam)
	if rd := read[minute]; rd.Count != 7 || rd.ID != "remote_address_10.0.0.7_"+strconv.FormatInt(nowS/60*60, 10) || rd.TTL <= 0 {
		t.Errorf("member %+v", rd)
	}
	l, err := insp.GetLimiter(ctx, minute)
	must(t, err)
	if l.Kind != inspect.KindEnvoyRatelimit || l.Count != 7 || l.IntervalMS != 60000 || l.Facts["unit"] != "minute" || l.Recognised == "" {
		t.Errorf("GetLimiter = %+v", l)
	}
	must(t, insp.ResetCounter(ctx, minute))
	if rdb.Exists(ctx, minute).Val() != 0 {
		t.Error("the reset left the window")
	}
}

// A force-unlock of a convention lock names its library's own outcome
// codes: gone, taken by someone else.
func TestConventionForceUnlockRefusals(t *testing.T) {
	insp, rdb, prefix := convEnv(t, inspect.ObjectPatterns{})
	ctx := t.Context()
	name := "lock:{" + prefix + "x}" // one slot with its signal list
	t.Cleanup(func() { rdb.Del(context.WithoutCancel(ctx), name) })
	id := randomBase64(18)
	must(t, rdb.Set(ctx, name, id, time.Minute).Err())
	l, err := insp.GetLock(ctx, name)
	must(t, err)
	if l.Kind != inspect.KindPyRedisLock {
		t.Fatalf("GetLock = %+v", l)
	}
	if err := insp.ForceUnlock(ctx, name, randomBase64(18)); !errors.Is(err, inspect.ErrHolderChanged) {
		t.Errorf("another id: %v", err)
	}
	must(t, insp.ForceUnlock(ctx, name, id))
	if err := insp.ForceUnlock(ctx, name, id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("gone: %v", err)
	}
}

// readFamily reads fam's members through a walk carrying a family.Reader's
// pages, as the console does, until a pass over them ended (bounded).
func readFamily(t *testing.T, insp *inspect.Inspector, match string, fam inspect.Family) map[string]inspect.FamilyReading {
	t.Helper()
	reader := family.NewReader(insp, match)
	w, err := walk.New(insp, match, &walk.Options{NoScan: true})
	must(t, err)
	read := map[string]inspect.FamilyReading{}
	at := time.Now()
	for tick := 0; reader.Sizes()[fam.ID].Passes == 0; tick++ {
		if tick > 50 {
			t.Fatalf("no pass over family %s in %d ticks: %v", fam.ID, tick, read)
		}
		at = at.Add(200 * time.Millisecond)
		w.Carry(reader.Page([]inspect.Family{fam}, at))
		s, err := w.Tick(t.Context(), nil, nil)
		must(t, err)
		must(t, s.FamiliesErr)
		for _, rd := range s.Families {
			read[rd.Key] = rd
		}
	}
	return read
}
