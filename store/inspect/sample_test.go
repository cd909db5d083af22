package inspect

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// sampleHook counts what a client sends: single commands and pipelines,
// leaving out the handshake go-redis runs on every new connection.
type sampleHook struct{ single, pipelines atomic.Int64 }

func sampleHandshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select", "readonly":
		return true
	}
	return false
}

func (h *sampleHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *sampleHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !sampleHandshake(cmd) {
			h.single.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *sampleHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && !sampleHandshake(cmds[0]) {
			h.pipelines.Add(1)
		}
		return next(ctx, cmds)
	}
}

func TestSampleOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	discCleanup(t, rdb, p)
	now := discNow(t, rdb)

	discLock(t, rdb, p+"lock:a", "1", 2)
	discLock(t, rdb, p+"lock:b", "2", 1)
	discBucket(t, rdb, p+"rl:a", now, 3, 10, "1000")
	discBucket(t, rdb, p+"rl:b", now, 0, 5, "1000")

	counted := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr})
	t.Cleanup(func() { counted.Close() })
	if err := counted.Ping(ctx).Err(); err != nil { // connect before counting
		t.Fatal(err)
	}
	c := New(counted, nil)
	// The window script is cached once per Redis; a first Sample on a fresh
	// server pays one extra round trip to load it (see Sample).
	if err := c.LoadScripts(ctx); err != nil {
		t.Fatal(err)
	}
	hook := &sampleHook{}
	counted.AddHook(hook)

	locks := []string{p + "lock:a", p + "lock:b", p + "lock:gone"}
	lims := []string{p + "rl:a", p + "rl:b", p + "rl:gone"}
	s, err := c.Sample(ctx, locks, lims)
	if err != nil {
		t.Fatal(err)
	}
	if got := hook.pipelines.Load(); got != 1 {
		t.Errorf("Sample sent %d pipelines, want 1", got)
	}
	if got := hook.single.Load(); got != 0 {
		t.Errorf("Sample sent %d single commands, want 0", got)
	}
	if len(s.Locks) != 2 || s.Locks[0].Name != p+"lock:a" || s.Locks[0].Holders[0].Count != 2 || s.Locks[1].Name != p+"lock:b" {
		t.Errorf("Locks = %+v", s.Locks)
	}
	if len(s.Limiters) != 2 || s.Limiters[0].Name != p+"rl:a" || s.Limiters[0].Rate != 10 || s.Limiters[1].Rate != 5 {
		t.Errorf("Limiters = %+v", s.Limiters)
	}
	if d := s.At.UnixMilli() - now; d < 0 || d > 10_000 {
		t.Errorf("At = %v is %d ms after the TIME read before it", s.At, d)
	}
	for _, name := range append(locks, lims...) {
		sum, ok := s.Stats[name]
		if !ok {
			t.Errorf("no Stats for %q", name)
			continue
		}
		if sum.Bucket != BucketOf(s.At) || sum.Window != (Counts{}) || sum.Newest != (Counts{}) {
			t.Errorf("Stats[%q] = %+v, want zero counts at bucket %d", name, sum, BucketOf(s.At))
		}
	}
	if len(s.Stats) != 6 {
		t.Errorf("Stats has %d entries, want 6", len(s.Stats))
	}

	// Nothing requested still reads Redis time, in one pipeline.
	hook.pipelines.Store(0)
	hook.single.Store(0)
	s, err = c.Sample(ctx, nil, nil)
	if err != nil || s.At.IsZero() || len(s.Stats) != 0 || hook.pipelines.Load() != 1 || hook.single.Load() != 0 {
		t.Errorf("empty Sample = %+v, %v (pipelines %d)", s, err, hook.pipelines.Load())
	}
}

// Objects that vanish, expire or change kind between ticks are left out, and
// a key of another type does not fail the whole sample.
func TestSampleVanishedAndChangedKind(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	discCleanup(t, rdb, p)
	c := New(rdb, nil)
	now := discNow(t, rdb)

	discLock(t, rdb, p+"lock:kept", "1", 1)
	discLock(t, rdb, p+"lock:deleted", "1", 1)
	discLock(t, rdb, p+"lock:nolease", "1", 1)
	discLock(t, rdb, p+"lock:string", "1", 1)
	discLock(t, rdb, p+"lock:nowbucket", "1", 1)
	discBucket(t, rdb, p+"rl:kept", now, 1, 10, "100")
	discBucket(t, rdb, p+"rl:deleted", now, 1, 10, "100")
	discBucket(t, rdb, p+"rl:list", now, 1, 10, "100")
	discBucket(t, rdb, p+"rl:nowlock", now, 1, 10, "100")

	s, err := c.Sample(ctx,
		[]string{p + "lock:kept", p + "lock:deleted", p + "lock:nolease", p + "lock:string", p + "lock:nowbucket"},
		[]string{p + "rl:kept", p + "rl:deleted", p + "rl:list", p + "rl:nowlock"})
	if err != nil || len(s.Locks) != 5 || len(s.Limiters) != 4 {
		t.Fatalf("before changes: %d locks %d limiters, %v", len(s.Locks), len(s.Limiters), err)
	}

	rdb.Del(ctx, p+"lock:deleted", p+"rl:deleted")
	rdb.Persist(ctx, p+"lock:nolease")
	rdb.Del(ctx, p+"lock:string")
	rdb.Set(ctx, p+"lock:string", "x", 0)
	rdb.Del(ctx, p+"lock:nowbucket")
	discBucket(t, rdb, p+"lock:nowbucket", now, 1, 10, "100")
	rdb.Del(ctx, p+"rl:list")
	rdb.RPush(ctx, p+"rl:list", "x")
	rdb.Del(ctx, p+"rl:nowlock")
	discLock(t, rdb, p+"rl:nowlock", "1", 1)

	s, err = c.Sample(ctx,
		[]string{p + "lock:kept", p + "lock:deleted", p + "lock:nolease", p + "lock:string", p + "lock:nowbucket"},
		[]string{p + "rl:kept", p + "rl:deleted", p + "rl:list", p + "rl:nowlock"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Locks) != 1 || s.Locks[0].Name != p+"lock:kept" {
		t.Errorf("Locks = %+v, want only lock:kept", s.Locks)
	}
	if len(s.Limiters) != 1 || s.Limiters[0].Name != p+"rl:kept" {
		t.Errorf("Limiters = %+v, want only rl:kept", s.Limiters)
	}
	if len(s.Stats) != 9 {
		t.Errorf("Stats has %d entries, want one per requested name (9)", len(s.Stats))
	}
}

// Stats written as a script would leave them show up in the sample's
// window. The bucket is read from Redis first; if the clock crosses into the
// next bucket before the sample, the attempt is repeated (each takes ~1 ms
// of a 200 ms bucket).
func TestSampleStatsWindow(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	c := New(rdb, nil)
	name := p + "rl"
	t.Cleanup(func() { rdb.Del(context.Background(), name, wire.StatsKey(name)) })

	for attempt := 0; attempt < 20; attempt++ {
		now := BucketOf(time.UnixMilli(discNow(t, rdb)))
		ring := statsTestRing(map[int64]Counts{
			now:     {1, 2, 3},
			now - 1: {10, 1, 0},
			now - 5: {20, 0, 1},
			now - 6: {500, 500, 500}, // just outside the window
			now - 7: {400, 400, 400}, // slot of now+9, left from the last turn
		})
		rdb.Del(ctx, wire.StatsKey(name))
		if err := rdb.HSet(ctx, wire.StatsKey(name), ring).Err(); err != nil {
			t.Fatal(err)
		}
		s, err := c.Sample(ctx, nil, []string{name})
		if err != nil {
			t.Fatal(err)
		}
		got := s.Stats[name]
		if got.Bucket != now {
			continue // crossed a bucket boundary: try again
		}
		want := Summary{Bucket: now, Window: Counts{30, 1, 1}, Newest: Counts{1, 2, 3}}
		if !sameWindows(got, want) {
			t.Fatalf("Stats = %+v, want %+v", got, want)
		}
		if len(s.Limiters) != 0 {
			t.Errorf("a name with only a stats ring is not a limiter: %+v", s.Limiters)
		}
		return
	}
	t.Fatal("never sampled within the bucket it wrote (20 attempts)")
}

// A Walker rides in the sample's one pipeline: a page lists keys, the
// next step sizes them, the one after classifies the small ones, and a
// large application hash is sized but never read.
func TestWalkerIncrementalDiscovery(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	discCleanup(t, rdb, p)
	now := discNow(t, rdb)
	discLock(t, rdb, p+"lock:a", "1", 2)
	discBucket(t, rdb, p+"rl:a", now, 3, 10, "1000")
	big := make([]any, 0, 2*(MaxHashFields+1))
	for i := range MaxHashFields + 1 {
		big = append(big, i, "v")
	}
	rdb.HSet(ctx, p+"app:big", big...)

	counted := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr})
	t.Cleanup(func() { counted.Close() })
	if err := counted.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	hook := &sampleHook{}
	counted.AddHook(hook)
	c := New(counted, nil)
	w, err := c.NewWalker(p+"*", &WalkOptions{Tick: time.Second, Pass: time.Second})
	if err != nil {
		t.Fatalf("one node without patterns cannot walk: %v", err)
	}

	// Like the console: sample what the walk found, one pass, then two
	// ticks to classify its last page.
	var locks, limiters, found []string
	skipped, steps, drain := 0, 0, -1
	for ; steps < 100 && drain != 0; steps++ {
		s, err := w.Tick(ctx, locks, limiters)
		if err != nil {
			t.Fatal(err)
		}
		r := s.Walk
		for _, l := range r.Locks {
			locks = append(locks, l.Name)
			found = append(found, "lock "+l.Name)
		}
		for _, l := range r.Limiters {
			limiters = append(limiters, l.Name)
			found = append(found, "limiter "+l.Name)
		}
		if drain != 1 { // the tick after the next re-sizes the next pass's page
			skipped += r.Skipped
		}
		switch {
		case drain > 0:
			drain--
		case drain < 0 && r.PassEnded:
			drain = 2
		}
	}
	if got := hook.pipelines.Load(); got != int64(steps) || hook.single.Load() != 0 {
		t.Errorf("%d steps sent %d pipelines and %d single commands, want one pipeline each", steps, got, hook.single.Load())
	}
	if len(found) != 2 || skipped != 1 {
		t.Errorf("found %v, skipped %d; want the lock, the limiter and one skipped hash", found, skipped)
	}
}

// The registry is read in the tick's own pipeline when asked for, so a
// tick with identities is still one round trip (it was two more: HLEN,
// then HGETALL with TIME, once a second).
func TestWalkerReadsClientsInTheTickPipeline(t *testing.T) {
	ctx := t.Context()
	app := store.New(redistest.Client(t), &store.Options{App: "orders-api"})
	t.Cleanup(func() { app.Close() })
	probe := redistest.Client(t)
	for i := 0; !probe.HExists(ctx, wire.ClientsKey, app.ID()).Val(); i++ {
		if i == 100 {
			t.Fatal("the application's first beat never came")
		}
		time.Sleep(20 * time.Millisecond)
	}
	counted := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr})
	t.Cleanup(func() { counted.Close() })
	if err := counted.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	c := New(counted, nil)
	if err := c.LoadScripts(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := c.NewWalker("*", &WalkOptions{NoScan: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Tick(ctx, nil, nil); err != nil { // the first tick's own reads
		t.Fatal(err)
	}
	hook := &sampleHook{}
	counted.AddHook(hook)
	w.ReadClients()
	s, err := w.Tick(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, single := hook.pipelines.Load(), hook.single.Load(); p != 1 || single != 0 {
		t.Errorf("a tick reading the registry sent %d pipelines and %d single commands, want 1 and 0", p, single)
	}
	if s.Registry == nil {
		t.Fatal("the tick asked to read the registry has none")
	}
	if ci, ok := s.Registry.Clients[app.ID()]; !ok || ci.App != "orders-api" {
		t.Errorf("registry %+v lacks the application client %s", s.Registry.Clients, app.ID())
	}
	// Not asked: not read.
	if s, err = w.Tick(ctx, nil, nil); err != nil || s.Registry != nil {
		t.Errorf("a tick not asked read the registry: %v, %v", s.Registry, err)
	}
}
