package history_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/history"
)

// limiterSamples are one sample per second from start for secs seconds, the
// limiter acquiring i%7, rejecting i%3 and failing i%11==0 in second i.
func limiterSamples(start time.Time, secs int, names ...string) []history.Sample {
	out := make([]history.Sample, 0, secs)
	for i := 1; i <= secs; i++ {
		s := history.Sample{At: start.Add(time.Duration(i) * time.Second)}
		for _, n := range names {
			s.Limiters = append(s.Limiters, history.LimiterSample{Name: n, Kind: "token-bucket",
				Acquired: int64(i % 7), Rejected: int64(i % 3), Errors: int64(btoi(i%11 == 0))})
		}
		out = append(out, s)
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// want sums limiterSamples' counts per step of the given size.
func want(start time.Time, secs int, step time.Duration) map[int64]history.Point {
	m := map[int64]history.Point{}
	for i := 1; i <= secs; i++ {
		at := start.Add(time.Duration(i) * time.Second)
		ts := at.Add(-time.Millisecond).Truncate(step).Unix()
		p := m[ts]
		p.T = ts
		p.Acquired += int64(i % 7)
		p.Rejected += int64(i % 3)
		p.Errors += int64(btoi(i%11 == 0))
		m[ts] = p
	}
	return m
}

func checkPoints(t *testing.T, got history.LimiterHistory, step time.Duration, n int, exp map[int64]history.Point) {
	t.Helper()
	if got.StepS != int64(step/time.Second) || len(got.Points) != n || !got.Kept {
		t.Fatalf("step %d, %d points, kept %v; want %v, %d, true", got.StepS, len(got.Points), got.Kept, step, n)
	}
	seen := 0
	for i, p := range got.Points {
		if i > 0 && p.T != got.Points[i-1].T+got.StepS {
			t.Fatalf("point %d at %d after %d: not one step apart", i, p.T, got.Points[i-1].T)
		}
		w, ok := exp[p.T]
		if ok {
			seen++
		} else {
			w = history.Point{T: p.T}
		}
		if p != w {
			t.Fatalf("point %d = %+v, want %+v", i, p, w)
		}
	}
	if seen != len(exp) {
		t.Fatalf("%d of %d expected steps in the span", seen, len(exp))
	}
}

// A new History (a restarted console) reads what the last one wrote.
func TestLimiterHistorySurvivesRestart(t *testing.T) {
	rdb, start := fresh(t)
	lim := name(t, "orders")
	h1 := open(t, rdb, nil)
	feed(t, []*history.History{h1}, limiterSamples(start, 150, lim)...)
	if !h1.Stats().Writer {
		t.Fatal("the only replica is not the writer")
	}
	if err := h1.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	h2 := open(t, rdb, nil)
	hour := readLimiter(t, h2, lim, history.SpanHour)
	checkPoints(t, hour, 10*time.Second, 360, want(start, 150, 10*time.Second))
	day := readLimiter(t, h2, lim, history.SpanDay)
	checkPoints(t, day, time.Minute, 1440, want(start, 150, time.Minute))
}

// Two replicas answer the same JSON, whichever of them writes.
func TestReplicasReadIdenticalJSON(t *testing.T) {
	rdb, start := fresh(t)
	lim, lk := name(t, "orders"), name(t, "job")
	writer, reader := open(t, rdb, &history.Options{ID: "a"}), open(t, rdb, &history.Options{ID: "b"})
	feed(t, []*history.History{writer}) // a takes the writer lock first
	samples := limiterSamples(start, 40, lim)
	for i := range samples {
		samples[i].Locks = []history.LockSample{{Name: lk, Holders: []history.Holder{holder(i / 10)}, PTTL: 30 * time.Second}}
	}
	feed(t, []*history.History{writer, reader}, samples...)
	ws, rs := writer.Stats(), reader.Stats()
	if !ws.Writer || rs.Writer || ws.LastFlush.IsZero() || !ws.LastFlush.Equal(rs.LastFlush) {
		t.Fatalf("writer %+v\nreader %+v\nwant one writer, both at the same last flush", ws, rs)
	}
	for _, span := range []string{history.SpanHour, history.SpanDay} {
		a := readLimiter(t, writer, lim, span)
		b := readLimiter(t, reader, lim, span)
		sameJSON(t, a, b)
		la := readLock(t, writer, lk, span)
		lb := readLock(t, reader, lk, span)
		sameJSON(t, la, lb)
		if len(la.Holds) != 4 {
			t.Fatalf("%d holds, want 3 ended and 1 running: %+v", len(la.Holds), la.Holds)
		}
	}
}

func sameJSON(t *testing.T, a, b any) {
	t.Helper()
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Fatalf("replicas differ:\n%s\n%s", ja, jb)
	}
}

// Rings hold the retention and no more; older steps read as nothing.
func TestRetentionTrims(t *testing.T) {
	rdb, start := fresh(t)
	lim := name(t, "orders")
	h := open(t, rdb, &history.Options{FineRetention: time.Minute, CoarseRetention: 5 * time.Minute})
	feed(t, []*history.History{h}, limiterSamples(start, 600, lim)...)

	hour := readLimiter(t, h, lim, history.SpanHour)
	all := want(start, 600, 10*time.Second)
	last := map[int64]history.Point{}
	for ts, p := range all {
		if ts >= start.Add(540*time.Second).Unix() {
			last[ts] = p
		}
	}
	checkPoints(t, hour, 10*time.Second, 6, last)
	n, err := rdb.StrLen(t.Context(), history.FineKey(lim)).Result()
	if err != nil || n != 6*16+1 {
		t.Fatalf("fine ring is %d bytes (%v), want 6 records and the pad byte", n, err)
	}
	n, err = rdb.StrLen(t.Context(), history.CoarseKey(lim)).Result()
	if err != nil || n != 5*16+1 {
		t.Fatalf("coarse ring is %d bytes (%v), want 5 records and the pad byte", n, err)
	}
	ttl, err := rdb.PTTL(t.Context(), history.CoarseKey(lim)).Result()
	if err != nil || ttl <= 0 || ttl > 6*time.Minute {
		t.Fatalf("coarse ring expires in %v (%v), want within its retention and an eighth", ttl, err)
	}
}

func TestBadSpan(t *testing.T) {
	rdb := redistest.Universal(t)
	h := open(t, rdb, nil)
	for _, span := range []string{"", "2h", "1H", "60m"} {
		_, err := h.Limiter(t.Context(), "x", span)
		if e := inspect.ErrorOf(err); e == nil || e.Code != inspect.CodeInvalid || e.Field != "span" || e.Message != "span must be 1h or 24h" {
			t.Fatalf("span %q: %v, want an invalid span", span, err)
		}
		if _, err := h.Lock(t.Context(), "x", span); inspect.CodeOf(err) != inspect.CodeInvalid || inspect.ErrorOf(err).Field != "span" {
			t.Fatalf("lock span %q: %v", span, err)
		}
	}
}

// Only the Top busiest limiters and locks are kept; one that falls out of
// the top loses its keys.
func TestTopBound(t *testing.T) {
	rdb, start := fresh(t)
	lims := []string{name(t, "a"), name(t, "b"), name(t, "c"), name(t, "d")}
	locks := []string{name(t, "l0"), name(t, "l1"), name(t, "l2")}
	h := open(t, rdb, &history.Options{Top: 2, HalfLife: time.Minute})
	// busy: per limiter its attempts a second, per lock how many seconds
	// each holder keeps it.
	busy := func(from time.Time, secs int, per map[string]int64, every map[string]int) []history.Sample {
		var out []history.Sample
		for i := 1; i <= secs; i++ {
			s := history.Sample{At: from.Add(time.Duration(i) * time.Second)}
			for n, v := range per {
				s.Limiters = append(s.Limiters, history.LimiterSample{Name: n, Acquired: v})
			}
			for n, p := range every {
				s.Locks = append(s.Locks, history.LockSample{Name: n, PTTL: time.Minute,
					Holders: []history.Holder{holder(i / p % 2)}})
			}
			out = append(out, s)
		}
		return out
	}
	kept := func(wantLims, wantLocks []string) {
		t.Helper()
		for _, n := range append(lims, locks...) {
			key, want := history.FineKey(n), contains(wantLims, n)
			if contains(locks, n) {
				key, want = history.HoldsKey(n), contains(wantLocks, n)
			}
			exists, err := rdb.Exists(t.Context(), key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if (exists == 1) != want {
				t.Fatalf("%s kept: %v, want kept %v and %v", n, exists == 1, wantLims, wantLocks)
			}
		}
		members, err := rdb.ZCard(t.Context(), history.IndexKey).Result()
		if err != nil || members != int64(len(wantLims)+len(wantLocks)) {
			t.Fatalf("index holds %d (%v), want %d", members, err, len(wantLims)+len(wantLocks))
		}
	}
	feed(t, []*history.History{h}, busy(start, 20,
		map[string]int64{lims[0]: 10, lims[1]: 5, lims[2]: 1, lims[3]: 2},
		map[string]int{locks[0]: 1, locks[1]: 2, locks[2]: 100})...)
	kept(lims[:2], locks[:2])
	if s := h.Stats(); s.LimitersKept != 2 || s.LimitersOmitted != 2 || s.LocksKept != 2 || s.LocksOmitted != 1 {
		t.Fatalf("stats %+v, want 2 kept and 2 omitted limiters, 2 kept and 1 omitted lock", s)
	}
	// Ten minutes later c, d and l2 are the busy ones.
	feed(t, []*history.History{h}, busy(start.Add(10*time.Minute), 30,
		map[string]int64{lims[2]: 50, lims[3]: 40}, map[string]int{locks[2]: 1})...)
	kept(lims[2:], []string{locks[0], locks[2]})
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

var _ redis.UniversalClient // the tests run on a single node and on a Cluster

func TestBadOptionsAndEnded(t *testing.T) {
	rdb := redistest.Universal(t)
	for _, o := range []history.Options{
		{FineRetention: 15 * time.Second}, {CoarseRetention: 90 * time.Second}, {Top: -1}, {Lease: time.Microsecond},
	} {
		if _, err := history.Open(t.Context(), rdb, &o); !errors.Is(err, history.ErrOptions) {
			t.Fatalf("Open(%+v) = %v, want ErrOptions", o, err)
		}
	}
	h := open(t, rdb, nil)
	lk := name(t, "job")
	if err := h.Ended(t.Context(), lk, "x", "stolen"); inspect.CodeOf(err) != inspect.CodeInvalid || inspect.ErrorOf(err).Field != "how" {
		t.Fatalf("Ended with a bad how: %v, want an invalid how", err)
	}
	// A lock whose history is not kept gets no key from Ended.
	if err := h.Ended(t.Context(), lk, "x", history.EndForceUnlocked); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(t.Context(), history.OpenKey(lk)).Result(); err != nil || n != 0 {
		t.Fatalf("Ended created a key for a lock not kept (%d, %v)", n, err)
	}
}
