package inspect

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

func TestSampleOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	inspecttest.Cleanup(t, rdb, p)
	now := redistest.NowMS(t, rdb)

	inspecttest.Lock(t, rdb, p+"lock:a", "1", 2)
	inspecttest.Lock(t, rdb, p+"lock:b", "2", 1)
	inspecttest.Bucket(t, rdb, p+"rl:a", now, 3, 10, "1000")
	inspecttest.Bucket(t, rdb, p+"rl:b", now, 0, 5, "1000")

	// A client of the shared Redis's own topology (a ClusterClient on a
	// Cluster, whose hooks see a pipeline once, however many masters it
	// goes to).
	counted := redistest.Universal(t)
	if err := counted.Ping(ctx).Err(); err != nil { // connect before counting
		t.Fatal(err)
	}
	c := New(counted, nil)
	// The window script is cached once per Redis; a first Sample on a fresh
	// server pays one extra round trip to load it (see Sample).
	if err := c.LoadScripts(ctx); err != nil {
		t.Fatal(err)
	}
	hook := &inspecttest.Trips{}
	counted.AddHook(hook)

	locks := []string{p + "lock:a", p + "lock:b", p + "lock:gone"}
	lims := []string{p + "rl:a", p + "rl:b", p + "rl:gone"}
	s, err := c.Sample(ctx, locks, lims)
	if err != nil {
		t.Fatal(err)
	}
	if got := hook.Pipelines.Load(); got != 1 {
		t.Errorf("Sample sent %d pipelines, want 1", got)
	}
	if got := hook.Single.Load(); got != 0 {
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
	hook.Pipelines.Store(0)
	hook.Single.Store(0)
	s, err = c.Sample(ctx, nil, nil)
	if err != nil || s.At.IsZero() || len(s.Stats) != 0 || hook.Pipelines.Load() != 1 || hook.Single.Load() != 0 {
		t.Errorf("empty Sample = %+v, %v (pipelines %d)", s, err, hook.Pipelines.Load())
	}
}

// Objects that vanish, expire or change kind between ticks are left out, and
// a key of another type does not fail the whole sample.
func TestSampleVanishedAndChangedKind(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	inspecttest.Cleanup(t, rdb, p)
	c := New(redistest.UniversalFor(t, rdb), nil)
	now := redistest.NowMS(t, rdb)

	inspecttest.Lock(t, rdb, p+"lock:kept", "1", 1)
	inspecttest.Lock(t, rdb, p+"lock:deleted", "1", 1)
	inspecttest.Lock(t, rdb, p+"lock:nolease", "1", 1)
	inspecttest.Lock(t, rdb, p+"lock:string", "1", 1)
	inspecttest.Lock(t, rdb, p+"lock:nowbucket", "1", 1)
	inspecttest.Bucket(t, rdb, p+"rl:kept", now, 1, 10, "100")
	inspecttest.Bucket(t, rdb, p+"rl:deleted", now, 1, 10, "100")
	inspecttest.Bucket(t, rdb, p+"rl:list", now, 1, 10, "100")
	inspecttest.Bucket(t, rdb, p+"rl:nowlock", now, 1, 10, "100")

	s, err := c.Sample(ctx,
		[]string{p + "lock:kept", p + "lock:deleted", p + "lock:nolease", p + "lock:string", p + "lock:nowbucket"},
		[]string{p + "rl:kept", p + "rl:deleted", p + "rl:list", p + "rl:nowlock"})
	if err != nil || len(s.Locks) != 5 || len(s.Limiters) != 4 {
		t.Fatalf("before changes: %d locks %d limiters, %v", len(s.Locks), len(s.Limiters), err)
	}

	rdb.Del(ctx, p+"lock:deleted") // one key a call: on a Cluster they are in different slots
	rdb.Del(ctx, p+"rl:deleted")
	rdb.Persist(ctx, p+"lock:nolease")
	rdb.Del(ctx, p+"lock:string")
	rdb.Set(ctx, p+"lock:string", "x", 0)
	rdb.Del(ctx, p+"lock:nowbucket")
	inspecttest.Bucket(t, rdb, p+"lock:nowbucket", now, 1, 10, "100")
	rdb.Del(ctx, p+"rl:list")
	rdb.RPush(ctx, p+"rl:list", "x")
	rdb.Del(ctx, p+"rl:nowlock")
	inspecttest.Lock(t, rdb, p+"rl:nowlock", "1", 1)

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
	c := New(redistest.UniversalFor(t, rdb), nil)
	name := p + "rl"
	t.Cleanup(func() { rdb.Del(context.Background(), name, wire.StatsKey(name)) })

	for attempt := 0; attempt < 20; attempt++ {
		now := BucketOf(time.UnixMilli(redistest.NowMS(t, rdb)))
		ring := statsTestRing(map[int64]Counts{
			now:     {Acquired: 1, Rejected: 2, Errors: 3},
			now - 1: {Acquired: 10, Rejected: 1, Errors: 0},
			now - 5: {Acquired: 20, Rejected: 0, Errors: 1},
			now - 6: {Acquired: 500, Rejected: 500, Errors: 500}, // just outside the window
			now - 7: {Acquired: 400, Rejected: 400, Errors: 400}, // slot of now+9, left from the last turn
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
		want := Summary{Bucket: now, Window: Counts{Acquired: 30, Rejected: 1, Errors: 1}, Newest: Counts{Acquired: 1, Rejected: 2, Errors: 3}}
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
