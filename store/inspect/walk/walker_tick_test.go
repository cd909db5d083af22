package walk

import (
	"context"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// A Walker rides in the sample's one pipeline: a page lists keys, the
// next step sizes them, the one after classifies the small ones, and a
// large application hash is sized but never read. Only a walker on one
// server SCANs in the sample (canScan), so the test has a server of its
// own whatever the shared Redis is.
func TestWalkerIncrementalDiscovery(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartT(t)
	rdb := redistest.NewClient(t, srv)
	p := redistest.Prefix(t)
	now := redistest.NowMS(t, rdb)
	inspecttest.Lock(t, rdb, p+"lock:a", "1", 2)
	inspecttest.Bucket(t, rdb, p+"rl:a", now, 3, 10, "1000")
	big := make([]any, 0, 2*(inspect.MaxHashFields+1))
	for i := range inspect.MaxHashFields + 1 {
		big = append(big, i, "v")
	}
	rdb.HSet(ctx, p+"app:big", big...)

	counted := redistest.NewClient(t, srv)
	if err := counted.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	hook := &inspecttest.Trips{}
	counted.AddHook(hook)
	c := inspect.New(counted, nil)
	w, err := New(c, p+"*", &Options{Tick: time.Second, Pass: time.Second})
	if err != nil {
		t.Fatalf("one node without patterns cannot walk: %v", err)
	}

	// Like the console: sample what the walk found, one pass, then three
	// ticks to classify its last page (typed, sized, read).
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
			drain = 3
		}
	}
	if got := hook.Pipelines.Load(); got != int64(steps) || hook.Single.Load() != 0 {
		t.Errorf("%d steps sent %d pipelines and %d single commands, want one pipeline each", steps, got, hook.Single.Load())
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
	// The shared Redis as serve reaches it (a ClusterClient on a Cluster,
	// whose hooks see a pipeline once, however many masters it goes to).
	counted := redistest.Universal(t)
	if err := counted.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	c := inspect.New(counted, nil)
	if err := c.LoadScripts(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := New(c, "*", &Options{NoScan: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Tick(ctx, nil, nil); err != nil { // the first tick's own reads
		t.Fatal(err)
	}
	hook := &inspecttest.Trips{}
	counted.AddHook(hook)
	w.ReadClients()
	s, err := w.Tick(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, single := hook.Pipelines.Load(), hook.Single.Load(); p != 1 || single != 0 {
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
