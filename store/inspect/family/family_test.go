package family

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/internal/inspecttest"
	"github.com/lockwarden/lockwarden/store/inspect/walk"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// env is a private redis-server (a family's SCAN pages list the whole
// keyspace), a writer client and an Inspector whose commands are counted.
type env struct {
	rdb     *redis.Client
	insp    *inspect.Inspector
	counted *inspecttest.Counter
}

func newEnv(t *testing.T) env {
	rdb, console, h := inspecttest.Private(t)
	return env{rdb: rdb, insp: inspect.New(console, nil), counted: h}
}

// setup is an Inspector on the shared Redis as serve reaches it (a
// ClusterClient on a Cluster: a Reader finds the masters it SCANs from
// its client's type), a writer and a prefix of the test's own.
func setup(t *testing.T) (context.Context, *inspect.Inspector, *redis.Client, string) {
	t.Helper()
	rdb, p := redistest.Client(t), redistest.Prefix(t)
	inspecttest.Cleanup(t, rdb, p)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, inspect.New(redistest.UniversalFor(t, rdb), nil), rdb, p
}

// 20,000 per-IP counters are one family: discovery lists none of them,
// each tick reads a bounded page whatever the family's size, a pass finds
// them all, and the one IP far over its limit leads the rejections.
func TestFamilyManyCountersOneRowBoundedReads(t *testing.T) {
	const keys = 20000
	e := newEnv(t)
	ctx := t.Context()
	e.counterFamily(t, 10, func(pipe redis.Pipeliner) {
		for i := range keys {
			pipe.Set(ctx, "hits:10.0."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256), 1+i%5, time.Hour)
		}
		pipe.Set(ctx, "hits:hot", 50, time.Hour)  // 40 over a limit of 10
		pipe.Set(ctx, "hits:busy", 10, time.Hour) // at the limit, nothing rejected
		pipe.Set(ctx, "other:1", 3, time.Hour)
	})
	if w, err := walk.New(e.insp, "*", nil); err != nil || !w.Scans() {
		t.Error("with only grouped counters the walk should SCAN hashes itself")
	}
	d, err := walk.Discover(ctx, e.insp, "*")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Limiters) != 0 {
		t.Fatalf("discovery listed %d counters one by one (first %s)", len(d.Limiters), d.Limiters[0].Name)
	}
	fams := e.insp.Families(nil)
	if len(fams) != 1 || fams[0].ID != "hits:*" || fams[0].Kind != inspect.FamilyCounters || fams[0].Limit != 10 {
		t.Fatalf("families = %+v", fams)
	}

	r := NewReader(e.insp, "*")
	book := NewBook()
	book.Retain(fams)
	at := time.Now()
	e.counted.Take("strlen")
	e.counted.Take("scan")
	for tick := 0; r.Sizes()["hits:*"].Passes == 0; tick++ {
		if tick > 2*keys/readsPerTick {
			t.Fatalf("no pass ended after %d ticks; sizes %+v", tick, r.Sizes())
		}
		// The pass may end once it has lasted its window (a minute); the
		// whole pass stays within the hour's span.
		at = at.Add(15 * time.Second)
		rs, err := r.tick(ctx, fams, at)
		if err != nil {
			t.Fatal(err)
		}
		book.Add(at, rs)
		reads, scans := e.counted.Take("strlen"), e.counted.Take("scan")
		if reads > readsPerTick || scans > 1 {
			t.Fatalf("tick %d read %d counters and sent %d SCANs; at most %d and 1 a tick", tick, reads, scans, readsPerTick)
		}
		// What the walk's pacing is charged is what was sent.
		if c := r.cost; c.reads["strlen"] != reads || c.scanned != int64(scans)*scanCount {
			t.Fatalf("tick %d charged %+v for %d reads and %d SCANs", tick, c, reads, scans)
		}
		e.counted.Take("getrange")
		e.counted.Take("pttl")
	}
	if sz := r.Sizes()["hits:*"]; sz.Keys != keys+2 {
		t.Errorf("the pass counted %d members, want %d", sz.Keys, keys+2)
	}
	rows := book.Rows(at, fams, r.Sizes())
	if len(rows) != 1 {
		t.Fatalf("rows = %+v", rows)
	}
	h := rows[0].Hour
	if len(h.MostRejected) != 1 || h.MostRejected[0].Key != "hits:hot" || h.MostRejected[0].Rejected != 40 {
		t.Errorf("most rejected = %+v, want hits:hot with 40", h.MostRejected)
	}
	if len(h.NearestLimit) != topShown || h.NearestLimit[0].Key != "hits:hot" || h.NearestLimit[0].Fill != 5 ||
		h.NearestLimit[1].Key != "hits:busy" || h.NearestLimit[1].Fill != 1 {
		t.Errorf("nearest the limit = %+v", h.NearestLimit)
	}
	if h.Readings != keys+2 || h.Rejected != 40 {
		t.Errorf("hour totals: %d readings, %d rejected", h.Readings, h.Rejected)
	}
}

// The console's tick reads a family's page in its own pipeline
// (Walker.Carry): one round trip a tick on one node, the SCAN pages that
// list the members included, and every member is read within a pass; a
// pipeline and a SCAN of the page's own would cost two or three round trips.
func TestFamilyPageRidesTheTickPipeline(t *testing.T) {
	const keys = 600
	e := newEnv(t)
	ctx := t.Context()
	e.counterFamily(t, 2, func(pipe redis.Pipeliner) {
		for i := range keys {
			pipe.Set(ctx, "hits:10.1.0."+strconv.Itoa(i), 1+i%3, time.Hour)
		}
	})
	w, err := walk.New(e.insp, "*", &walk.Options{Tick: 200 * time.Millisecond, Pass: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fams := e.insp.Families(nil)
	r := NewReader(e.insp, "*")
	at := time.Now()
	read := map[string]bool{}
	// The walker's first tick learns the server (what it counts, the
	// scripts it loads); the steady ticks are the ones measured.
	if _, err := w.Tick(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	e.counted.RoundTrips()
	e.counted.TakeLog()
	for tick := 0; r.Sizes()["hits:*"].Passes == 0; tick++ {
		if tick > 50 {
			t.Fatalf("no pass ended after %d ticks; sizes %+v, %d read", tick, r.Sizes(), len(read))
		}
		at = at.Add(200 * time.Millisecond)
		w.Carry(r.Page(fams, at))
		s, err := w.Tick(ctx, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := e.counted.RoundTrips(); n != 1 {
			t.Fatalf("tick %d took %d round trips, want 1 (the sample's pipeline): %v", tick, n, e.counted.TakeLog())
		}
		if s.FamiliesErr != nil {
			t.Fatal(s.FamiliesErr)
		}
		e.counted.TakeLog()
		for _, rd := range s.Families {
			read[rd.Key] = true
		}
	}
	if len(read) != keys || r.Sizes()["hits:*"].Keys != keys {
		t.Errorf("read %d members, the pass counted %d; want %d", len(read), r.Sizes()["hits:*"].Keys, keys)
	}
}

// counterFamily writes the test's keys with write, in one pipeline, and
// makes every key matching hits:* one family of limit hits a minute.
func (e env) counterFamily(t *testing.T, limit int64, write func(redis.Pipeliner)) {
	t.Helper()
	pipe := e.rdb.Pipeline()
	write(pipe)
	if _, err := pipe.Exec(t.Context()); err != nil {
		t.Fatal(err)
	}
	err := e.insp.SetObjectPatterns(inspect.ObjectPatterns{GroupCounters: true,
		Counters: []inspect.CounterRule{{Pattern: "hits:*", Limit: limit, Window: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
}

// A per-client Redisson limiter's clients are a family named after the
// limiter, each member named by its client id.
func TestFamilyRedissonPerClient(t *testing.T) {
	ctx, c, rdb, p := setup(t)
	name := p + "per-client"
	rdb.HSet(ctx, name, "rate", 10, "interval", 60000, "type", 1)
	for i, left := range []int64{9, 2, 0} { // fixed windows: 1, 8 and 10 taken
		rdb.Set(ctx, wire.RedissonValueKey(name, "client-"+strconv.Itoa(i)), left, time.Minute)
	}
	lim, err := c.GetLimiter(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	fams := c.Families([]inspect.LimiterInfo{*lim})
	if len(fams) != 1 || fams[0].ID != name || fams[0].Kind != inspect.FamilyPerClient || fams[0].Limit != 10 {
		t.Fatalf("families = %+v", fams)
	}
	r := NewReader(c, p+"*")
	book := NewBook()
	book.Retain(fams)
	at := time.Now()
	var got []inspect.FamilyReading
	for tick := 0; len(got) < 3 && tick < 10000; tick++ { // list, then read (the shared server has other keys)
		rs, err := r.tick(ctx, fams, at)
		if err != nil {
			t.Fatal(err)
		}
		book.Add(at, rs)
		got = append(got, rs...)
	}
	if len(got) != 3 {
		t.Fatalf("readings = %+v", got)
	}
	m := book.Rows(at, fams, r.Sizes())[0].Minute
	if len(m.NearestLimit) != 3 || m.NearestLimit[0].ID != "client-2" || m.NearestLimit[0].Fill != 1 ||
		m.MostAdmitted[1].ID != "client-1" || m.MostAdmitted[1].Admitted != 8 {
		t.Errorf("minute = %+v", m)
	}
}

// Space-Saving keeps a heavy member among many light ones in topK
// entries, and the spans keep what their buckets cover: a reading two
// minutes old is in the hour, not the minute.
func TestFamilyBookTopKAndSpans(t *testing.T) {
	f := inspect.Family{ID: "ip:*", Kind: inspect.FamilyCounters, Limit: 5}
	b := NewBook()
	b.Retain([]inspect.Family{f})
	at := time.UnixMilli(1_700_000_000_000)
	var rs []inspect.FamilyReading
	for i := range 1000 {
		rs = append(rs, newWindow(f.ID, fmt.Sprintf("ip:%d", i), 6, 5)) // 1 rejected each
		if i%10 == 0 {
			rs = append(rs, newWindow(f.ID, "ip:heavy", 25, 5)) // 20 each
		}
	}
	b.Add(at.Add(-2*time.Minute), []inspect.FamilyReading{newWindow(f.ID, "ip:old", 500, 5)})
	b.Add(at, rs)
	for _, bk := range b.fams[f.ID].spans[0] {
		if len(bk.rejected) > topK || len(bk.admitted) > topK || len(bk.fill) > topK {
			t.Fatalf("a bucket kept %d/%d/%d members", len(bk.rejected), len(bk.admitted), len(bk.fill))
		}
	}
	row := b.Rows(at, []inspect.Family{f}, nil)[0]
	if top := row.Minute.MostRejected; len(top) == 0 || top[0].Key != "ip:heavy" || top[0].Rejected < 100*20 {
		t.Errorf("minute's most rejected = %+v", top)
	}
	if row.Minute.Rejected != 1000+100*20 || row.Minute.Readings != 1100 {
		t.Errorf("minute totals = %d rejected in %d readings", row.Minute.Rejected, row.Minute.Readings)
	}
	for _, o := range row.Minute.NearestLimit {
		if o.Key == "ip:old" {
			t.Error("a reading two minutes old counts in the last minute")
		}
	}
	if top := row.Hour.NearestLimit; len(top) == 0 || top[0].Key != "ip:old" || top[0].Fill != 100 {
		t.Errorf("hour's nearest the limit = %+v", top)
	}
	if !strings.HasPrefix(row.Hour.MostRejected[0].Key, "ip:") || row.Hour.Rejected != row.Minute.Rejected+495 {
		t.Errorf("hour = %+v", row.Hour)
	}
}

// newWindow is the first reading of a window of count hits.
func newWindow(family, key string, count, limit int64) inspect.FamilyReading {
	r := inspect.FamilyReading{Family: family, Key: key, Count: count, Limit: limit}
	r.NewAdmitted, r.NewRejected = r.Admitted(), r.Rejected()
	return r
}

// A small family is read every few ticks: a window read twice counts its
// hits once, and a new window counts in full.
func TestFamilyWindowCountedOnce(t *testing.T) {
	ctx, c, rdb, p := setup(t)
	if err := c.SetObjectPatterns(inspect.ObjectPatterns{GroupCounters: true,
		Counters: []inspect.CounterRule{{Pattern: p + "ip:*", Limit: 3, Window: time.Minute}}}); err != nil {
		t.Fatal(err)
	}
	ip := p + "ip:1"
	rdb.Set(ctx, ip, 2, time.Minute)
	fams := c.Families(nil)
	r := NewReader(c, p+"*")
	// next reads until ip is read once more.
	next := func() inspect.FamilyReading {
		t.Helper()
		for range 10000 {
			rs, err := r.tick(ctx, fams, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			for _, rd := range rs {
				if rd.Key == ip {
					return rd
				}
			}
		}
		t.Fatal("the member was not read")
		return inspect.FamilyReading{}
	}
	if rd := next(); rd.NewAdmitted != 2 || rd.NewRejected != 0 {
		t.Fatalf("first reading = %+v", rd)
	}
	if rd := next(); rd.NewAdmitted != 0 || rd.NewRejected != 0 {
		t.Fatalf("the same window again = %+v", rd)
	}
	rdb.IncrBy(ctx, ip, 3) // 5: one more admitted, two rejected
	if rd := next(); rd.Count != 5 || rd.NewAdmitted != 1 || rd.NewRejected != 2 {
		t.Fatalf("after 3 hits = %+v", rd)
	}
	rdb.Set(ctx, ip, 1, 10*time.Second) // a new window
	if rd := next(); rd.NewAdmitted != 1 || rd.NewRejected != 0 {
		t.Fatalf("a new window = %+v", rd)
	}
}

// A per-client limiter's client list comes from the family's readings:
// at most MaxClientsShown clients, those with the smallest ids, sorted; a
// fixed window counts down from its reading and leaves the list once it
// ends; a client whose key is gone leaves it once a whole pass did not
// read it.
func TestFamilyClientsFromReadings(t *testing.T) {
	const clients = inspect.MaxClientsShown + 50
	e := newEnv(t)
	ctx := t.Context()
	name := "per-client"
	e.rdb.HSet(ctx, name, "rate", 10, "interval", 60000, "type", 1)
	id := func(i int) string { return fmt.Sprintf("c-%04d", i) }
	pipe := e.rdb.Pipeline()
	for i := range clients {
		// Reverse order of ids, so the smallest are not the first written.
		pipe.Set(ctx, wire.RedissonValueKey(name, id(clients-1-i)), 4, time.Hour) // 6 of 10 taken
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	lim, err := e.insp.GetLimiter(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	fams := e.insp.Families([]inspect.LimiterInfo{*lim})
	r := NewReader(e.insp, "*")
	at := time.Now()
	pass := func() {
		t.Helper()
		for p := r.Sizes()[name].Passes; r.Sizes()[name].Passes == p; {
			if _, err := r.tick(ctx, fams, at); err != nil {
				t.Fatal(err)
			}
			at = at.Add(200 * time.Millisecond)
		}
	}
	pass()
	got := r.Clients(name, at)
	if len(got) != inspect.MaxClientsShown {
		t.Fatalf("%d clients listed, want %d", len(got), inspect.MaxClientsShown)
	}
	for i, w := range got {
		if w.ClientID != id(i) || w.Available != 4 || w.Used != 6 || w.ResetInMS <= 0 || w.ResetInMS > time.Hour.Milliseconds() {
			t.Fatalf("client %d = %+v, want %s with 4 available, 6 used, its window ending within the hour", i, w, id(i))
		}
	}
	if r.Clients("hits:*", at) != nil || r.Clients("other", at) != nil {
		t.Error("clients listed for a name that is no per-client family")
	}

	// A deleted client is dropped after a pass that did not read it, and
	// the next smallest id takes its place.
	e.rdb.Del(ctx, wire.RedissonValueKey(name, id(0)))
	pass()
	pass()
	got = r.Clients(name, at)
	if len(got) != inspect.MaxClientsShown || got[0].ClientID != id(1) || got[len(got)-1].ClientID != id(inspect.MaxClientsShown) {
		t.Fatalf("after c-0000's key went: %d clients, %s..%s", len(got), got[0].ClientID, got[len(got)-1].ClientID)
	}

	// The window counts down from its reading, and leaves once ended.
	first := got[0]
	later := r.Clients(name, at.Add(time.Minute))
	if later[0].ClientID != first.ClientID || first.ResetInMS-later[0].ResetInMS != time.Minute.Milliseconds() {
		t.Errorf("a minute later the first client = %+v (was %+v)", later[0], first)
	}
	if n := len(r.Clients(name, at.Add(2*time.Hour))); n != 0 {
		t.Errorf("%d clients listed after their windows ended", n)
	}
}
