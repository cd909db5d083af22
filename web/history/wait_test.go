package history_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/history"
)

// waitSample is second i of a lock's made-up waits: i%4 acquisitions, of
// which i%3 waited, those in class (i/20)%10 (the classes' bound ms each, the
// last class 12 s), so each minute has its own quantiles.
func waitSample(i int) history.WaitSample {
	acq, cont := int64(i%4), int64(min(i%3, i%4))
	w := history.WaitSample{Acquired: acq, Contended: cont}
	if cont == 0 {
		return w
	}
	class := (i / 20) % inspect.WaitClasses
	ms := int64(12_000)
	if class < len(inspect.WaitClassBoundsMS) {
		ms = inspect.WaitClassBoundsMS[class]
	}
	w.Classes[class] = cont
	w.TotalMS, w.MaxMS = cont*ms, ms
	return w
}

// wantWaits sums waitSample per minute of the samples at start+i s, and
// derives the quantiles from each minute's full histogram.
func wantWaits(start time.Time, secs int) []history.WaitPoint {
	type minute struct {
		p       history.WaitPoint
		classes [inspect.WaitClasses]int64
	}
	var order []int64
	m := map[int64]*minute{}
	for i := 1; i <= secs; i++ {
		w := waitSample(i)
		if w.Acquired == 0 {
			continue
		}
		ts := start.Add(time.Duration(i)*time.Second - time.Millisecond).Truncate(time.Minute).Unix()
		if m[ts] == nil {
			m[ts] = &minute{p: history.WaitPoint{T: ts}}
			order = append(order, ts)
		}
		mi := m[ts]
		mi.p.Acquired += w.Acquired
		mi.p.Contended += w.Contended
		mi.p.TotalMS += w.TotalMS
		mi.p.MaxMS = max(mi.p.MaxMS, w.MaxMS)
		for c, n := range w.Classes {
			mi.classes[c] += n
		}
	}
	out := make([]history.WaitPoint, 0, len(order))
	for _, ts := range order {
		mi := m[ts]
		mi.p.P50MS, mi.p.P99MS = quantileMS(mi.classes, mi.p.MaxMS, 0.5), quantileMS(mi.classes, mi.p.MaxMS, 0.99)
		out = append(out, mi.p)
	}
	return out
}

// quantileMS is the q-quantile of a histogram as store/inspect reads it:
// its class's bound, capped by the max.
func quantileMS(classes [inspect.WaitClasses]int64, maxMS int64, q float64) int64 {
	var n, seen int64
	for _, k := range classes {
		n += k
	}
	if n == 0 {
		return 0
	}
	for c, k := range classes {
		seen += k
		if float64(seen) >= q*float64(n) {
			if c < len(inspect.WaitClassBoundsMS) {
				return min(inspect.WaitClassBoundsMS[c], maxMS)
			}
			return maxMS
		}
	}
	return maxMS
}

func waitSamples(start time.Time, from, to int, lk string) []history.Sample {
	var out []history.Sample
	for i := from; i <= to; i++ {
		out = append(out, history.Sample{At: start.Add(time.Duration(i) * time.Second),
			Locks: []history.LockSample{{Name: lk, Kind: "store-lock", PTTL: -1, Wait: waitSample(i)}}})
	}
	return out
}

func checkWaits(t *testing.T, who string, got history.LockHistory, want []history.WaitPoint) {
	t.Helper()
	g, _ := json.Marshal(got.Wait)
	w, _ := json.Marshal(want)
	if string(g) != string(w) || !got.Kept {
		t.Fatalf("%s: kept %v, waits\n%s\nwant\n%s", who, got.Kept, g, w)
	}
}

// A lock's waits are kept per minute, exactly, across a flush in the
// middle of a minute (the minute is rewritten whole); a replica that only
// read reads the same, and so does a History opened after the writer
// closed (a restarted console).
func TestLockWaitsPerMinute(t *testing.T) {
	rdb, start := fresh(t)
	lk := name(t, "checkout")
	writer := open(t, rdb, nil)
	feed(t, []*history.History{writer}) // writer first
	reader := open(t, rdb, nil)
	both := []*history.History{writer, reader}
	feed(t, both, waitSamples(start, 1, 90, lk)...) // a flush 30 s into the second minute
	feed(t, both, waitSamples(start, 91, 185, lk)...)
	want := wantWaits(start, 185)
	if len(want) != 4 || want[0].P99MS == want[1].P99MS && want[1].P99MS == want[2].P99MS {
		t.Fatalf("the made-up waits do not tell minutes apart: %+v", want)
	}
	for _, span := range []string{history.SpanHour, history.SpanDay} {
		checkWaits(t, "writer "+span, readLock(t, writer, lk, span), want)
		checkWaits(t, "reader "+span, readLock(t, reader, lk, span), want)
	}
	if err := writer.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := reader.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := writer.Stats(); st.Keys != 3+3 || st.BytesEstimate < 24*60*17 {
		t.Fatalf("stats %+v: the wait ring is not counted", st)
	}
	restarted := open(t, rdb, nil)
	checkWaits(t, "restarted", readLock(t, restarted, lk, history.SpanDay), want)
	n, err := rdb.StrLen(t.Context(), history.WaitKey(lk)).Result()
	if err != nil || n != 24*60*17+1 {
		t.Fatalf("wait ring is %d bytes (%v), want its full length allocated at once", n, err)
	}
}

// A lock with no acquisitions writes no wait ring, and the memory
// estimate counts none for it.
func TestLockWithoutWaitsHasNoRing(t *testing.T) {
	rdb, start := fresh(t)
	lk := name(t, "idle")
	h := open(t, rdb, nil)
	feed(t, []*history.History{h}, lockAt(start.Add(time.Second), lk, time.Minute, holder(1)),
		lockAt(start.Add(2*time.Second), lk, time.Minute, holder(2)))
	if got := readLock(t, h, lk, history.SpanDay); len(got.Wait) != 0 || !got.Kept {
		t.Fatalf("waits %+v, kept %v", got.Wait, got.Kept)
	}
	if n, _ := rdb.Exists(t.Context(), history.WaitKey(lk)).Result(); n != 0 {
		t.Fatal("a lock without acquisitions got a wait ring")
	}
	if st := h.Stats(); st.LocksKept != 1 || st.Keys != 3+2 || st.BytesEstimate > 24*60*17 {
		t.Fatalf("stats %+v: a wait ring counted for a lock without one", st)
	}
}

// The most contended locks over a span come first, those without
// contention not at all, ties by name; at most n.
func TestMostContended(t *testing.T) {
	rdb, start := fresh(t)
	lks := []string{name(t, "a"), name(t, "b"), name(t, "c"), name(t, "idle")}
	contended := map[string]int64{lks[0]: 2, lks[1]: 5, lks[2]: 5}
	h := open(t, rdb, nil)
	var samples []history.Sample
	for i := 1; i <= 70; i++ {
		s := history.Sample{At: start.Add(time.Duration(i) * time.Second)}
		for _, lk := range lks {
			ls := history.LockSample{Name: lk, PTTL: -1, Holders: []history.Holder{holder(i % 2)},
				Wait: history.WaitSample{Acquired: 1}}
			if i <= 2 && contended[lk] > 0 {
				ls.Wait = history.WaitSample{Acquired: contended[lk], Contended: contended[lk], MaxMS: 2, TotalMS: 2 * contended[lk]}
				ls.Wait.Classes[1] = contended[lk]
			}
			s.Locks = append(s.Locks, ls)
		}
		samples = append(samples, s)
	}
	feed(t, []*history.History{h}, samples...)
	got, err := h.MostContended(t.Context(), 2, history.SpanDay)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != lks[1] || got[1].Name != lks[2] || got[0].Contended != 10 || got[1].Contended != 10 {
		t.Fatalf("most contended: %+v, want b then c with 10 each", got)
	}
	if len(got[0].Wait) != 2 || got[0].Wait[0].Contended != 10 || got[0].Wait[0].P99MS != 2 || got[0].Wait[1].Acquired != 10 {
		t.Fatalf("b's minutes: %+v", got[0].Wait)
	}
	all, err := h.MostContended(t.Context(), 10, history.SpanHour)
	if err != nil || len(all) != 3 || all[2].Name != lks[0] {
		t.Fatalf("all: %+v (%v), want the three contended ones", all, err)
	}
	if _, err := h.MostContended(t.Context(), 2, "7d"); err == nil {
		t.Fatal("span 7d accepted")
	}
}

// A lock that leaves the top loses its wait ring, and gets it back at full
// length when it returns.
func TestWaitRingBackAfterLeavingTop(t *testing.T) {
	rdb, start := fresh(t)
	a, b := name(t, "a"), name(t, "b")
	h := open(t, rdb, &history.Options{Top: 1, HalfLife: time.Minute})
	contend := func(from time.Time, lk string, n int64) []history.Sample {
		var out []history.Sample
		for i := 1; i <= 20; i++ {
			w := history.WaitSample{Acquired: n, Contended: n}
			w.Classes[0] = n
			out = append(out, history.Sample{At: from.Add(time.Duration(i) * time.Second),
				Locks: []history.LockSample{{Name: lk, PTTL: -1, Wait: w}}})
		}
		return out
	}
	ringLen := func(lk string) int64 {
		n, err := rdb.StrLen(t.Context(), history.WaitKey(lk)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	full := int64(24*60*17 + 1)
	feed(t, []*history.History{h}, contend(start, a, 5)...)
	if n := ringLen(a); n != full {
		t.Fatalf("a's ring: %d bytes, want %d", n, full)
	}
	feed(t, []*history.History{h}, contend(start.Add(10*time.Minute), b, 50)...)
	if n := ringLen(a); n != 0 {
		t.Fatalf("a left the top and kept its %d-byte ring", n)
	}
	feed(t, []*history.History{h}, contend(start.Add(20*time.Minute), a, 500)...)
	if n := ringLen(a); n != full {
		t.Fatalf("a came back with a %d-byte ring, want %d", n, full)
	}
}
