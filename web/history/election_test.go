package history_test

import (
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/history"
)

// One replica writes; the others only read until the writer closes.
func TestOneWriterTakeoverOnClose(t *testing.T) {
	rdb := redistest.Universal(t)
	clean(t, rdb)
	start := base(t, rdb)
	a := open(t, rdb, &history.Options{ID: "a"})
	feed(t, []*history.History{a})
	b := open(t, rdb, &history.Options{ID: "b"})
	onlyB := name(t, "seen-by-b-only")
	feed(t, []*history.History{b}, limiterSamples(start, 5, onlyB)...)
	if !a.Stats().Writer || b.Stats().Writer {
		t.Fatalf("a writer %v, b writer %v; want a only", a.Stats().Writer, b.Stats().Writer)
	}
	if n, err := rdb.Exists(t.Context(), inspect.HistoryFineKey(onlyB)).Result(); err != nil || n != 0 {
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
	if w, err := rdb.HGet(t.Context(), inspect.HistoryMetaKey, "writer").Result(); err != nil || w != "b" {
		t.Fatalf("meta writer %q (%v), want b", w, err)
	}
}

// A writer that dies without a word (its connection gone, so its watchdog
// cannot renew) is replaced once its lease runs out.
func TestTakeoverAfterWriterCrash(t *testing.T) {
	rdb := redistest.Universal(t)
	clean(t, rdb)
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
		if left, err := rdb.PTTL(t.Context(), inspect.HistoryWriterLock).Result(); err == nil && left > 0 {
			time.Sleep(left)
		}
		feed(t, []*history.History{b})
	}
}
