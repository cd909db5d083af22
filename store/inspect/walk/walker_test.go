package walk

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// walkEnv is a private redis-server (the registry key and the keyspace
// notification settings are server-wide), a writer client and an
// inspect.Inspector whose commands are counted.
type walkEnv struct {
	rdb     *redis.Client
	insp    *inspect.Inspector
	counted *inspecttest.Counter
}

func newWalkEnv(t *testing.T) walkEnv {
	rdb, console, h := inspecttest.Private(t)
	return walkEnv{rdb: rdb, insp: inspect.New(console, nil), counted: h}
}

// foreignLock writes a Redisson-layout lock as a client that announces
// nothing would.
func (e walkEnv) foreignLock(t *testing.T, name string) {
	t.Helper()
	holder := store.New(e.rdb, nil).ID() + ":7"
	if err := e.rdb.HSet(t.Context(), name, holder, 1).Err(); err != nil {
		t.Fatal(err)
	}
	e.rdb.PExpire(t.Context(), name, time.Minute)
}

// tickUntil ticks w (as the console does, adding what it finds to the
// sampled names) until name is found or ticks run out, and returns how
// it was found.
func tickUntil(t *testing.T, w *Walker, locks *[]string, name string, ticks int) (inspect.Source, bool) {
	t.Helper()
	for range ticks {
		s, err := w.Tick(t.Context(), *locks, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range s.Walk.Locks {
			*locks = append(*locks, l.Name)
			if l.Name == name {
				return s.Walk.Sources[name], true
			}
		}
	}
	return "", false
}

func TestWalkAnnouncedNameWithoutScan(t *testing.T) {
	e := newWalkEnv(t)
	ctx := t.Context()
	w, err := New(e.insp, "*", &Options{NoScan: true})
	if err != nil {
		t.Fatal(err)
	}
	var locks []string
	if _, ok := tickUntil(t, w, &locks, "", 2); ok || len(locks) != 0 {
		t.Fatalf("an empty server listed %v", locks)
	}
	// A store client's lock and its announcement (store/registry.go).
	name := "orders:lock:announced"
	e.foreignLock(t, name)
	now, _ := e.rdb.Time(ctx).Result()
	e.rdb.ZAdd(ctx, inspect.RegistryNamesKey, redis.Z{Score: float64(now.UnixMilli()), Member: name})
	e.counted.Take("scan")

	// The tick that reads the zset reads the new name too (it took two
	// ticks, each slow on a big console).
	src, ok := tickUntil(t, w, &locks, name, 1)
	if !ok || src != inspect.SourceAnnounced {
		t.Fatalf("announced lock not found by the tick that read its announcement (found %v, source %q)", ok, src)
	}
	if n := e.counted.Take("scan"); n != 0 {
		t.Errorf("%d SCAN calls to find an announced name, want none", n)
	}
	// Announced again (a beat) it is not read as new again.
	e.rdb.ZAdd(ctx, inspect.RegistryNamesKey, redis.Z{Score: float64(now.UnixMilli() + 5), Member: name})
	e.counted.Take("hgetall")
	if _, ok := tickUntil(t, w, &locks, name, 3); ok {
		t.Error("a known name was listed again after its next announcement")
	}
}

// Token locks and counters are strings: announced with their kind, they
// are read as such at once and sampled from then on, with no pattern
// configured (before, they were read as hashes and never listed).
func TestWalkAnnouncedStringKinds(t *testing.T) {
	e := newWalkEnv(t)
	ctx := t.Context()
	app := store.New(e.rdb, &store.Options{NoBatching: true})
	t.Cleanup(func() { _ = app.Close() })
	w, err := New(e.insp, "*", &Options{NoScan: true})
	if err != nil {
		t.Fatal(err)
	}
	var locks, limiters []string
	tick := func() *inspect.Sample {
		t.Helper()
		s, err := w.Tick(ctx, locks, limiters)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range s.Walk.Locks {
			locks = append(locks, l.Name)
		}
		for _, l := range s.Walk.Limiters {
			limiters = append(limiters, l.Name)
		}
		return s
	}
	tick()
	tok := app.NewTokenLock("jobs:token", nil)
	if err := tok.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	hits := app.NewCounter("ip:hits:10.0.0.1", &store.LimiterOptions{Limit: 5, Window: time.Minute})
	if _, err := hits.TryAcquire(ctx, 2); err != nil {
		t.Fatal(err)
	}
	var s *inspect.Sample
	for range 50 { // the client's first flush is 50 ms away
		if s = tick(); len(s.Walk.Locks)+len(s.Walk.Limiters) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(s.Walk.Locks) != 1 || s.Walk.Locks[0].Kind != inspect.KindTokenLock || s.Walk.Locks[0].Holders[0].ID != tok.HolderID() ||
		s.Walk.Sources["jobs:token"] != inspect.SourceAnnounced {
		t.Fatalf("walk found locks %+v (sources %v), want the token lock", s.Walk.Locks, s.Walk.Sources)
	}
	if len(s.Walk.Limiters) != 1 || s.Walk.Limiters[0].Kind != inspect.KindCounter || s.Walk.Limiters[0].Count != 2 {
		t.Fatalf("walk found limiters %+v, want the counter at 2", s.Walk.Limiters)
	}
	// inspect.Sampled as strings from then on; gone, they leave the sample and the
	// console forgets their kind.
	s = tick()
	if len(s.Locks) != 1 || s.Locks[0].Kind != inspect.KindTokenLock || len(s.Limiters) != 1 || s.Limiters[0].Count != 2 {
		t.Fatalf("sample: locks %+v limiters %+v", s.Locks, s.Limiters)
	}
	if err := tok.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	e.rdb.Del(ctx, "ip:hits:10.0.0.1")
	if s = tick(); len(s.Locks)+len(s.Limiters) != 0 {
		t.Fatalf("gone objects still sampled: %+v %+v", s.Locks, s.Limiters)
	}
	locks, limiters = nil, nil
	tick()
	if e.insp.ObjectPatterns().ListsString("jobs:token") {
		t.Error("kind of a gone token lock still remembered")
	}
}

func TestWalkForeignLockByKeyspaceNotification(t *testing.T) {
	e := newWalkEnv(t)
	ctx := t.Context()
	ke, err := WatchKeyEvents(ctx, e.insp, KeyEventsOn, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ke.Close() })
	if !ke.Active() {
		t.Fatalf("notifications not subscribed: %s", ke.State)
	}
	flags, _ := e.rdb.ConfigGet(ctx, "notify-keyspace-events").Result()
	if !hasKeyEventFlags(flags["notify-keyspace-events"]) {
		t.Fatalf("notify-keyspace-events %q after on", flags)
	}
	w, err := New(e.insp, "*", &Options{NoScan: true})
	if err != nil {
		t.Fatal(err)
	}
	name := "orders:lock:foreign"
	e.foreignLock(t, name)
	e.rdb.HSet(ctx, "app:user:1", "name", "someone") // a candidate that is not an object

	var locks []string
	var src inspect.Source
	found := false
	for i := 0; i < 100 && !found; i++ { // the message travels on its own connection
		w.Suggest(ke.Drain())
		src, found = tickUntil(t, w, &locks, name, 1)
		if !found {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if !found || src != inspect.SourceNotified {
		t.Fatalf("foreign lock not found from notifications (found %v, source %q, %s)", found, src, ke.State)
	}
	if n := e.counted.Take("scan"); n != 0 {
		t.Errorf("%d SCAN calls, want none", n)
	}
	if slices.Contains(locks, "app:user:1") {
		t.Error("an application hash was listed as a lock")
	}
}

func TestWalkKeyEventsAutoAndOff(t *testing.T) {
	e := newWalkEnv(t)
	ke, err := WatchKeyEvents(t.Context(), e.insp, KeyEventsAuto, "")
	if err != nil {
		t.Fatal(err)
	}
	if ke.Active() {
		t.Errorf("auto subscribed on a server without notifications: %s", ke.State)
	}
	ke, err = WatchKeyEvents(t.Context(), e.insp, KeyEventsOff, "")
	if err != nil || ke.Active() {
		t.Errorf("off: %v %s", err, ke.State)
	}
	if _, err := ParseKeyEventsMode("sometimes"); err == nil {
		t.Error("ParseKeyEventsMode accepted sometimes")
	}
}

func TestWalkForeignLockByPacedPassWithoutNotifications(t *testing.T) {
	e := newWalkEnv(t)
	ctx := t.Context()
	// Enough other keys that a pass takes several pages.
	if err := e.rdb.Do(ctx, "DEBUG", "POPULATE", 5000, "app:str", 8).Err(); err != nil {
		// DEBUG is off on this server: fill by pipeline instead.
		p := e.rdb.Pipeline()
		for i := range 5000 {
			p.Set(ctx, fmt.Sprintf("app:str:%d", i), "v", 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ke, err := WatchKeyEvents(ctx, e.insp, KeyEventsAuto, "")
	if err != nil || ke.Active() {
		t.Fatalf("notifications: %v %s", err, ke.State)
	}
	w, err := New(e.insp, "*", &Options{Tick: 200 * time.Millisecond, Pass: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	name := "orders:lock:unannounced"
	e.foreignLock(t, name)
	var locks []string
	src, ok := tickUntil(t, w, &locks, name, 200)
	if !ok || src != inspect.SourceScan {
		t.Fatalf("the paced pass did not find the lock (found %v, source %q)", ok, src)
	}
	st := w.Status()
	if st.KeysScanned == 0 || st.PageCount < minBudgetPage {
		t.Errorf("status %+v", st)
	}
}

func TestPacerCountFollowsPassAndBudget(t *testing.T) {
	p := newPacer(200*time.Millisecond, time.Minute, 0.02)
	t0 := time.Unix(1_000_000, 0)
	// Unknown cost: the budget at assumedCostPerKey (2 µs) pays for 2,000.
	if got := p.count(1_000_000, t0, true); got != 2000 {
		t.Fatalf("count before any measurement = %d, want 2000", got)
	}
	// Cheap enough: the pass target alone. 1M keys in 300 ticks.
	p.costPerKey = 0.1
	if got := p.count(1_000_000, t0, true); got != 3333 {
		t.Fatalf("count with cheap keys = %d, want 3333", got)
	}
	p.sent(3333, 0)
	// Cheap pages: the budget (4,000 µs a tick) pays for more than the
	// pass needs, so the pass target decides.
	if got := p.count(1_000_000, t0.Add(200*time.Millisecond), false); got != 3333 {
		t.Errorf("count with cheap keys = %d, want the pass target 3333", got)
	}
	// Expensive pages (2 µs a key): the budget caps the page at 2,000
	// keys a tick and the pass takes longer.
	p.costPerKey = 2
	if got := p.count(1_000_000, t0.Add(400*time.Millisecond), false); got != 2000 {
		t.Errorf("count with 2 µs keys = %d, want 2000 (4,000 µs a tick)", got)
	}
	// However expensive, a page is never above the budget: at 10M keys
	// the pass gets longer instead, and says how long.
	p.costPerKey = 1.3
	p.budget = 0.03
	if got := p.count(10_000_000, t0.Add(600*time.Millisecond), true); got != 4615 {
		t.Errorf("count at 10M keys = %d, want the budget's 4615", got)
	}
	if got := p.budgetPass(10_000_000); got.Round(time.Second) != 433*time.Second {
		t.Errorf("budget pass at 10M keys = %v, want 433s", got)
	}
	// Bounds: never below minBudgetPage, never above maxScanPage.
	p.costPerKey = 1e6
	if got := p.count(30_000, t0.Add(800*time.Millisecond), false); got != minBudgetPage {
		t.Errorf("count at huge cost = %d, want %d", got, minBudgetPage)
	}
	p.costPerKey = 0.001
	if got := p.count(1e9, t0.Add(time.Second), false); got != maxScanPage {
		t.Errorf("count of a huge keyspace = %d, want %d", got, maxScanPage)
	}
}

// Pages were sized per tick, so a sampler whose ticks ran late (a loaded
// host) stretched every pass; they now follow the keys and time left.
func TestPacerCatchesUpAfterLateTicks(t *testing.T) {
	p := newPacer(200*time.Millisecond, time.Minute, 0.03)
	p.costPerKey = 0.01 // the budget is not what limits here
	t0 := time.Unix(1_000_000, 0)
	p.count(1_000_000, t0, true)
	p.sent(333_000, 0) // half the pass's time went by with a third of its keys
	if got := p.count(1_000_000, t0.Add(30*time.Second), false); got != 4446 {
		t.Errorf("count half-way with a third done = %d, want 667,000 keys / 150 ticks = 4446", got)
	}
	// Past the target end: what is left, as fast as the bounds allow.
	if got := p.count(1_000_000, t0.Add(70*time.Second), false); got != maxScanPage {
		t.Errorf("count after the target end = %d, want %d", got, maxScanPage)
	}
	// The budget pays for the time since the last page, not a tick: a
	// page 400 ms after the previous one may cost twice a tick's share.
	p.costPerKey = 2
	p.sent(p.count(1_000_000, t0.Add(80*time.Second), true), 0)
	if got := p.count(1_000_000, t0.Add(80*time.Second+400*time.Millisecond), false); got != 3344 {
		t.Errorf("count after a 400 ms gap at 2 µs = %d, want the pass share 996,667 / 298 = 3344 (the budget pays 6,000)", got)
	}
	p.costPerKey = 4
	if got := p.count(1_000_000, t0.Add(80*time.Second+800*time.Millisecond), false); got != 3000 {
		t.Errorf("count after a 400 ms gap at 4 µs = %d, want 3000", got)
	}
	// A stalled sampler earns at most maxPageGap ticks.
	p.costPerKey = 10
	if got := p.count(1_000_000, t0.Add(90*time.Second), false); got != 3000 {
		t.Errorf("count after a 10 s gap at 10 µs = %d, want 3000 (1 s of budget)", got)
	}
}

func TestPacerReadsCommandStats(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_scan:calls=10,usec=250,usec_per_call=25.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hgetall:calls=5,usec=99,usec_per_call=19.80\r\ncmdstat_hlen:calls=100,usec=50,usec_per_call=0.50\r\n" +
		"cmdstat_pttl:calls=4,usec=4,usec_per_call=1.00\r\ncmdstat_get:calls=1,usec=7,usec_per_call=7.00\r\n" +
		"# CPU\r\nused_cpu_sys:9.5\r\nused_cpu_sys_main_thread:0.25\r\nused_cpu_user_main_thread:1.5\r\n"
	c := parseRedisCost(info)
	if c.walkUsec != 300 || c.readCost != 20.8 || c.allUsec != 410 || c.cpuUsec != 1.75e6 {
		t.Errorf("parseRedisCost = %+v; want 300 (scan and hlen), 20.8 (hgetall and pttl per call), 410 (all) and 1.75e6 (main thread)", c)
	}
	// Candidate reads count at their measured cost.
	p := newPacer(200*time.Millisecond, time.Minute, 0.02)
	p.observe(redisCost{readCost: 2}, time.Time{})
	p.sent(1000, 100) // 1,000 keys and 100 reads at 2 µs
	p.observe(redisCost{walkUsec: 800, readCost: 2}, time.Time{})
	if p.costPerKey != 1 {
		t.Errorf("cost per key %v, want 1 ((800 + 100 x 2) / 1000)", p.costPerKey)
	}
	// A statistics reset (usec going down) re-baselines instead of a
	// negative cost.
	p.observe(redisCost{walkUsec: 1}, time.Time{})
	if p.costPerKey != 1 {
		t.Errorf("cost after a reset = %v, want unchanged", p.costPerKey)
	}
}

// The cost was commandstats' wall time: on a busy host, Redis descheduled
// inside a SCAN made the walk pay for time it did not use. It is scaled
// by the main thread's CPU over every command's usec, and never up.
func TestPacerCostIsRedisCPU(t *testing.T) {
	p := newPacer(200*time.Millisecond, time.Minute, 0.03)
	p.observe(redisCost{walkUsec: 1000, allUsec: 5000, cpuUsec: 1e6}, time.Time{})
	p.sent(1000, 0)
	// 2,000 µs of walk over 1,000 keys, while Redis was on a core for
	// half of its commands' time.
	p.observe(redisCost{walkUsec: 3000, allUsec: 9000, cpuUsec: 1e6 + 2000}, time.Time{})
	if p.costPerKey != 1 {
		t.Errorf("cost per key = %v, want 1 (2 µs wall, half of it on a core)", p.costPerKey)
	}
	// Redis busier than its commands (I/O, timers): the wall time stands.
	p.costPerKey = 0
	p.sent(1000, 0)
	p.observe(redisCost{walkUsec: 5000, allUsec: 11000, cpuUsec: 1e6 + 6000}, time.Time{})
	if p.costPerKey != 2 {
		t.Errorf("cost per key = %v, want 2 (never scaled up)", p.costPerKey)
	}
}

func TestWalkIdleObjectsReadLessOften(t *testing.T) {
	e := newWalkEnv(t)
	const n = 20
	var locks []string
	for i := range n {
		name := fmt.Sprintf("idle:lock:%d", i)
		e.foreignLock(t, name)
		locks = append(locks, name)
	}
	w, err := New(e.insp, "*", &Options{NoScan: true, IdleEvery: 5})
	if err != nil {
		t.Fatal(err)
	}
	tick := func() *inspect.Sample {
		t.Helper()
		s, err := w.Tick(t.Context(), locks, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Locks) != n {
			t.Fatalf("tick %d listed %d locks, want all %d", w.ticks, len(s.Locks), n)
		}
		return s
	}
	for range idleAfter + 1 { // every object read unchanged: now idle
		tick()
	}
	e.counted.Take("pttl")
	for range 10 {
		tick()
	}
	// Two turns each in 10 ticks instead of ten reads.
	if got := e.counted.Take("pttl"); got != 2*n {
		t.Errorf("10 ticks read %d lock leases, want %d (each idle lock every 5th tick)", got, 2*n)
	}
	// A notification about one makes it read on the next tick.
	w.Suggest([]string{locks[3]})
	tick()
	e.counted.Take("pttl")
	w.Suggest([]string{locks[3]})
	fields, _ := e.rdb.HKeys(t.Context(), locks[3]).Result()
	e.rdb.HIncrBy(t.Context(), locks[3], fields[0], 1) // re-entered
	s := tick()
	if got := e.counted.Take("pttl"); got < 1 {
		t.Errorf("a notified lock was not read (%d reads)", got)
	}
	for _, l := range s.Locks {
		if l.Name == locks[3] && (len(l.Holders) != 1 || l.Holders[0].Count != 2) {
			t.Errorf("the notified lock shows holders %+v, want one entered twice (read fresh)", l.Holders)
		}
	}
}

func TestRegistryReaderPagesWithinOneScore(t *testing.T) {
	r := newRegistryReader()
	page := func(from int, score float64, n int) *redis.ZSliceCmd {
		zs := make([]redis.Z, n)
		for i := range zs {
			zs[i] = redis.Z{Score: score, Member: fmt.Sprintf("n%d", from+i)}
		}
		return redis.NewZSliceCmdResult(zs, nil)
	}
	if got := r.result(page(0, 100, registryPage)); len(got) != registryPage || r.offset != registryPage || r.from != "-inf" {
		t.Fatalf("first full page: %d names, from %s offset %d", len(got), r.from, r.offset)
	}
	if got := r.result(page(registryPage, 100, 10)); len(got) != 10 || r.offset != 0 || r.from != "-900" {
		t.Fatalf("rest of the score: %d names, from %s offset %d", len(got), r.from, r.offset)
	}
	// The overlap returns names already handed over: not again.
	if got := r.result(page(registryPage, 100, 10)); len(got) != 0 {
		t.Errorf("overlap handed over %v again", got)
	}
}

func TestCadenceReadsIdleLockNearItsExpiry(t *testing.T) {
	c := newCadence(5)
	at := time.UnixMilli(1_700_000_000_000)
	c.lastAt = at
	c.tick = 1
	c.objs["long"] = &objState{lock: &inspect.LockInfo{PTTL: time.Minute}, quiet: idleAfter, slot: 1, readAt: at}
	c.objs["ending"] = &objState{lock: &inspect.LockInfo{PTTL: 1500 * time.Millisecond}, quiet: idleAfter, slot: 1, readAt: at.Add(-time.Second)}
	if c.due("long") {
		t.Error("an idle lock with a minute left is read off its turn")
	}
	if !c.due("ending") {
		t.Error("an idle lock half a second from expiry is not read")
	}
}

// On a Cluster every master publishes its own keyevents: the console
// subscribes to each, so locks on every master are found, and the names
// are sized and read through the one pipeline split per node.
func TestWalkClusterKeyEventsPerMaster(t *testing.T) {
	cl := redistest.StartCluster(t, nil)
	cc := redistest.NewClusterClient(t, cl)
	insp := inspect.New(cc, nil)
	ke, err := WatchKeyEvents(t.Context(), insp, KeyEventsOn, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ke.Close() })
	if !ke.Active() {
		t.Fatalf("not subscribed: %s", ke.State)
	}
	w, err := New(insp, "*", nil)
	if err != nil || w.Scans() {
		t.Fatalf("walker on a Cluster: %v, scans %v", err, w.Scans())
	}
	holder := store.New(cc, nil).ID() + ":3"
	want := map[string]bool{}
	for i := range 12 { // names in slots all over, so on every master
		name := fmt.Sprintf("cl:lock:%d", i)
		cc.HSet(t.Context(), name, holder, 1)
		cc.PExpire(t.Context(), name, time.Minute)
		want[name] = true
	}
	var locks []string
	for i := 0; i < 200 && len(want) > 0; i++ {
		w.Suggest(ke.Drain())
		s, err := w.Tick(t.Context(), locks, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range s.Walk.Locks {
			locks = append(locks, l.Name)
			delete(want, l.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(want) > 0 {
		rec, drop := ke.Counts()
		t.Errorf("not found through notifications: %v (received %d, dropped %d, status %+v)", want, rec, drop, w.Status())
	}
}

// Objects unchanged for longIdleAfter reads are read half as often again.
func TestWalkLongIdleObjectsReadHalfAsOften(t *testing.T) {
	e := newWalkEnv(t)
	const n, every = 20, 4
	var locks []string
	for i := range n {
		name := fmt.Sprintf("long-idle:lock:%d", i)
		e.foreignLock(t, name)
		locks = append(locks, name)
	}
	w, err := New(e.insp, "*", &Options{NoScan: true, IdleEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	ticks := func(k int) int {
		t.Helper()
		e.counted.Take("pttl")
		for range k {
			s, err := w.Tick(t.Context(), locks, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Locks) != n {
				t.Fatalf("tick listed %d locks, want %d", len(s.Locks), n)
			}
		}
		return e.counted.Take("pttl")
	}
	ticks(idleAfter + 1)
	if got := ticks(4 * every); got != 4*n {
		t.Fatalf("idle: %d ticks read %d leases, want %d", 4*every, got, 4*n)
	}
	ticks((longIdleAfter - idleAfter) * every) // unchanged reads enough to be long idle
	if got := ticks(4 * every); got != 2*n {
		t.Errorf("long idle: %d ticks read %d leases, want %d (each lock every %d ticks)", 4*every, got, 2*n, 2*every)
	}
}

// The budget is the console's: sampling's measured cost comes off it and
// the walk paces itself on the rest, never less than minWalkShare of it.
func TestPacerWalkGetsTheBudgetLessSampling(t *testing.T) {
	p := newPacer(200*time.Millisecond, time.Minute, 0.05)
	p.costPerKey = 2
	t0 := time.Unix(1000, 0)
	full := p.budgetCount(t0) // 5 % of a tick at 2 µs a key: 5,000
	p.observe(redisCost{}, t0)
	// One second of sampling: 10,000 HGETALL at 1.75 µs + 0.25 µs of
	// protocol each is 20 ms, 2 % of a core; the walk's own SCAN and
	// candidate reads are not sampling.
	p.countSent(map[string]int{"hgetall": 10_100, "scan": 1}, map[string]int{"hgetall": 100, "scan": 1})
	p.observe(redisCost{perCall: map[string]float64{"hgetall": 1.75, "scan": 5000}}, t0.Add(time.Second))
	if math.Abs(p.sampleShare-0.02) > 1e-9 {
		t.Fatalf("sampling share %v, want 0.02", p.sampleShare)
	}
	p.lastPage = time.Time{}
	if got := p.budgetCount(t0); got != full*3/5 {
		t.Errorf("the walk's page with sampling at 2 %% of a 5 %% budget: %d keys, want %d", got, full*3/5)
	}
	if got, want := p.budgetPass(1_000_000), time.Duration(66_666_666_667); got.Round(time.Millisecond) != want.Round(time.Millisecond) {
		t.Errorf("budget pass %v, want %v (1M keys at 2 µs on 3 %%)", got, want)
	}
	// Sampling over the whole budget leaves the walk its floor.
	p.sampleShare = 0.08
	if got := p.walkBudget(); math.Abs(got-0.05*minWalkShare) > 1e-12 {
		t.Errorf("walk budget %v with sampling over the budget, want %v", got, 0.05*minWalkShare)
	}
}

// The evictions kept between ticks are bounded: a flood of evicted keys
// outside the console's names must not push out a lock's eviction, which
// would then pass for an expiry. The evicted keyevents are published by
// hand on the channel Redis uses, as many as a full buffer and more.
func TestWalkEvictionsOfOtherKeysKeepALocksEviction(t *testing.T) {
	e := newWalkEnv(t)
	ctx := t.Context()
	ke, err := WatchKeyEvents(ctx, e.insp, KeyEventsOn, "orders:*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ke.Close() })
	if !ke.Active() {
		t.Fatalf("notifications not subscribed: %s", ke.State)
	}
	const channel = "__keyevent@0__:evicted"
	p := e.rdb.Pipeline()
	for i := range maxEvicted + 500 {
		p.Publish(ctx, channel, fmt.Sprintf("cache:page:%d", i))
	}
	p.Publish(ctx, channel, "orders:lock:evicted")
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	redistest.Eventually(t, "the lock's eviction collected", func() bool {
		got = append(got, ke.DrainEvicted()...)
		return slices.Contains(got, "orders:lock:evicted")
	})
	if len(got) != 1 {
		t.Errorf("kept %d evictions (%v), want only the lock's", len(got), got[:min(len(got), 3)])
	}
}
