package history_test

import (
	"slices"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/history"
)

// One replica writes; the others only read until the writer closes.
func TestOneWriterTakeoverOnClose(t *testing.T) {
	rdb, start := fresh(t)
	a := open(t, rdb, &history.Options{ID: "a"})
	feed(t, []*history.History{a})
	b := open(t, rdb, &history.Options{ID: "b"})
	onlyB := name(t, "seen-by-b-only")
	feed(t, []*history.History{b}, limiterSamples(start, 5, onlyB)...)
	if !a.Stats().Writer || b.Stats().Writer {
		t.Fatalf("a writer %v, b writer %v; want a only", a.Stats().Writer, b.Stats().Writer)
	}
	if n, err := rdb.Exists(t.Context(), history.FineKey(onlyB)).Result(); err != nil || n != 0 {
		t.Fatalf("a reader wrote (%d, %v)", n, err)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	feed(t, []*history.History{b})
	if !b.Stats().Writer {
		t.Fatal("b did not take over after a closed")
	}
	// b flushes what it saw while a wrote.
	got, err := b.Limiter(t.Context(), onlyB, history.SpanHour)
	if err != nil || !got.Kept {
		t.Fatalf("b's own steps not written after the takeover: %+v, %v", got, err)
	}
	if w, err := rdb.HGet(t.Context(), history.MetaKey, "writer").Result(); err != nil || w != "b" {
		t.Fatalf("meta writer %q (%v), want b", w, err)
	}
}

// A writer that dies without a word (its connection gone, so its watchdog
// cannot renew) is replaced once its lease runs out.
func TestTakeoverAfterWriterCrash(t *testing.T) {
	rdb, _ := fresh(t)
	const lease = 600 * time.Millisecond
	crashing := redistest.Universal(t)
	a := open(t, crashing, &history.Options{ID: "a", Lease: lease})
	feed(t, []*history.History{a})
	b := open(t, rdb, &history.Options{ID: "b", Lease: lease})
	feed(t, []*history.History{b})
	if !a.Stats().Writer || b.Stats().Writer {
		t.Fatal("a should write, b read")
	}
	if err := crashing.Close(); err != nil {
		t.Fatal(err)
	}
	// The lease still runs: b stays a reader.
	feed(t, []*history.History{b})
	if b.Stats().Writer {
		t.Fatal("b took over while a's lease still ran")
	}
	deadline := time.Now().Add(20 * lease)
	for !b.Stats().Writer {
		if time.Now().After(deadline) {
			t.Fatalf("b did not take over within %v", 20*lease)
		}
		// Wait for the lease Redis reports, then try again.
		if left, err := rdb.PTTL(t.Context(), history.WriterLock).Result(); err == nil && left > 0 {
			time.Sleep(left)
		}
		feed(t, []*history.History{b})
	}
}

// A replica that takes over right after starting keeps the history of
// objects it has not seen busy yet: it ranks from the scores the last
// writer left, and deletes nothing it cannot rank.
func TestTakeoverKeepsIdleHistory(t *testing.T) {
	rdb, start := fresh(t)
	idle, busy, lk := name(t, "idle"), name(t, "busy"), name(t, "job")
	a := open(t, rdb, &history.Options{ID: "a"})
	samples := limiterSamples(start, 30, idle)
	samples[0].Locks = []history.LockSample{{Name: lk, Holders: []history.Holder{holder(1)}, PTTL: time.Minute}}
	samples[1].Locks = []history.LockSample{{Name: lk, Holders: []history.Holder{holder(2)}, PTTL: time.Minute}}
	feed(t, []*history.History{a}, samples...)
	before := readLimiter(t, a, idle, history.SpanHour)
	locked := readLock(t, a, lk, history.SpanHour)
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	// b starts a minute later and sees another limiter busy, and no lock.
	b := open(t, rdb, &history.Options{ID: "b", Top: 2})
	feed(t, []*history.History{b}, limiterSamples(start.Add(time.Minute), 30, busy)...)
	if !b.Stats().Writer {
		t.Fatal("b is not the writer")
	}
	after := readLimiter(t, b, idle, history.SpanHour)
	// b's newest step is six after a's: a's three steps sit six back.
	was, is := before.Points[len(before.Points)-3:], after.Points[len(after.Points)-9:len(after.Points)-6]
	if !after.Kept || !slices.Equal(was, is) || was[0].Acquired == 0 {
		t.Fatalf("the idle limiter's history changed on takeover:\nbefore %v\nafter  %v", was, is)
	}
	still, err := b.Lock(t.Context(), lk, history.SpanHour)
	if err != nil || !still.Kept || len(still.Holds) != len(locked.Holds) {
		t.Fatalf("the lock's holds changed on takeover: %+v, was %+v (%v)", still.Holds, locked.Holds, err)
	}
}

// A replica that started in the middle of a step does not overwrite the
// last writer's count of that step with the part it saw.
func TestTakeoverKeepsPartlySeenSteps(t *testing.T) {
	rdb, start := fresh(t)
	lim := name(t, "orders")
	samples := limiterSamples(start, 51, lim)
	a := open(t, rdb, &history.Options{ID: "a"})
	feed(t, []*history.History{a}, samples[:35]...)
	b := open(t, rdb, &history.Options{ID: "b"})
	feed(t, []*history.History{a, b}, samples[35:50]...)
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	feed(t, []*history.History{b}) // takes over
	feed(t, []*history.History{b}, samples[50])
	if !b.Stats().Writer {
		t.Fatal("b did not take over")
	}
	day := readLimiter(t, b, lim, history.SpanDay)
	hour := readLimiter(t, b, lim, history.SpanHour)
	// The minute stays a's count of its 50 seconds: b saw 16 of them
	// (so its one second after a closed is not in it).
	checkPoints(t, day, time.Minute, 1440, want(start, 50, time.Minute))
	checkPoints(t, hour, 10*time.Second, 360, want(start, 51, 10*time.Second))
}
