package history_test

import (
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/history"
)

// A node whose script cache was emptied (SCRIPT FLUSH, a restart, a
// promoted replica) answers the flush's hold writes NOSCRIPT: they did not
// run, so they go out once more with the script's text, and the flush
// succeeds with every hold written.
func TestHoldWritesAfterScriptFlush(t *testing.T) {
	rdb := redistest.NewClient(t, redistest.StartT(t)) // the flush must not reach other tests
	start := base(t, rdb)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Second) }
	lk := name(t, "job")
	a, b := holder(1), holder(2)
	h := open(t, rdb, nil)
	feed(t, []*history.History{h}, lockAt(at(1), lk, 30*time.Second, a))
	if err := rdb.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	feed(t, []*history.History{h}, lockAt(at(2), lk, 30*time.Second, b)) // a hands off to b
	got := readLock(t, h, lk, history.SpanHour)
	if len(got.Holds) != 2 || got.Holds[0].Holder != b.ID || got.Holds[1].Holder != a.ID ||
		got.Holds[1].Ended != history.EndHandedOff {
		t.Fatalf("holds after a flushed script cache: %+v, want b running and a handed off", got.Holds)
	}
}
