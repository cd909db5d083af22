package history_test

import (
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/web/history"
)

func lockAt(at time.Time, name string, pttl time.Duration, hs ...history.Holder) history.Sample {
	s := history.Sample{At: at}
	if len(hs) > 0 {
		s.Locks = []history.LockSample{{Name: name, Holders: hs, PTTL: pttl}}
	}
	return s
}

// Every way a hold ends is told apart: handed off in the same sample and in
// the next, the lease running out, a force-unlock, a release.
func TestLockHoldEndings(t *testing.T) {
	rdb, start := fresh(t)
	lk := name(t, "job")
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Second) }
	a, b, c, d, e, f := holder(1), holder(2), holder(3), holder(4), holder(5), holder(6)
	a.Since = at(1).Add(-400 * time.Millisecond) // recorded by the lock's scripts
	h := open(t, rdb, nil)
	feed(t, []*history.History{h},
		lockAt(at(1), lk, 30*time.Second, a),
		lockAt(at(2), lk, 30*time.Second, b),       // a hands off to b
		lockAt(at(3), lk, 0),                       // b gone ...
		lockAt(at(4), lk, 500*time.Millisecond, c), // ... and c took it: handed off
		lockAt(at(5), lk, 0),                       // c's lease ran out
		lockAt(at(6), lk, 30*time.Second, d),
	)
	if err := h.Ended(t.Context(), lk, d.ID, history.EndForceUnlocked); err != nil {
		t.Fatal(err)
	}
	feed(t, []*history.History{h},
		lockAt(at(7), lk, 0), // d force-unlocked
		lockAt(at(8), lk, 30*time.Second, e),
		lockAt(at(9), lk, 0),
		lockAt(at(10), lk, 0), // nobody took it: released
		lockAt(at(11), lk, 30*time.Second, f),
	)
	got := readLock(t, h, lk, history.SpanHour)
	ms := func(i int, plus time.Duration) time.Time { return at(i).Add(plus).UTC() }
	want := []history.Hold{
		{Holder: f.ID, From: ms(11, 0)},
		{Holder: e.ID, From: ms(8, 0), To: ms(9, 0), Ended: history.EndReleased},
		{Holder: d.ID, From: ms(6, 0), To: ms(7, 0), Ended: history.EndForceUnlocked},
		{Holder: c.ID, From: ms(4, 0), To: ms(4, 500*time.Millisecond), Ended: history.EndExpired},
		{Holder: b.ID, From: ms(2, 0), To: ms(3, 0), Ended: history.EndHandedOff},
		{Holder: a.ID, From: ms(1, -400*time.Millisecond), To: ms(2, 0), Ended: history.EndHandedOff},
	}
	if len(got.Holds) != len(want) {
		t.Fatalf("%d holds, want %d: %+v", len(got.Holds), len(want), got.Holds)
	}
	for i, w := range want {
		g := got.Holds[i]
		if g.Holder != w.Holder || !g.From.Equal(w.From) || !g.To.Equal(w.To) || g.Ended != w.Ended {
			t.Fatalf("hold %d = %+v, want %+v", i, g, w)
		}
		if g.Client == nil || g.Client.App != "orders-api" || g.Client.Host != "host-7" || g.Client.PID == 0 {
			t.Fatalf("hold %d lost its client: %+v", i, g.Client)
		}
	}
	if !got.Kept || got.Wait == nil {
		t.Fatalf("kept %v, wait %v", got.Kept, got.Wait)
	}
}

// A force-unlock made through a replica that does not write is still
// recorded as such by the writer.
func TestForceUnlockThroughReader(t *testing.T) {
	rdb, start := fresh(t)
	lk := name(t, "job")
	writer := open(t, rdb, nil)
	feed(t, []*history.History{writer})
	reader := open(t, rdb, nil)
	both := []*history.History{writer, reader}
	d := holder(4)
	feed(t, both, lockAt(start.Add(time.Second), lk, 30*time.Second, d))
	if err := reader.Ended(t.Context(), lk, d.ID, history.EndForceUnlocked); err != nil {
		t.Fatal(err)
	}
	feed(t, both, lockAt(start.Add(2*time.Second), lk, 0), lockAt(start.Add(3*time.Second), lk, 0))
	got := readLock(t, reader, lk, history.SpanDay)
	if len(got.Holds) != 1 || got.Holds[0].Ended != history.EndForceUnlocked {
		t.Fatalf("holds %+v, want one force-unlocked", got.Holds)
	}
}

// A lock keeps HoldsPerLock ended holds, newest first.
func TestHoldsTrimmed(t *testing.T) {
	rdb, start := fresh(t)
	lk := name(t, "job")
	h := open(t, rdb, &history.Options{HoldsPerLock: 3})
	var samples []history.Sample
	for i := 1; i <= 10; i++ {
		samples = append(samples, lockAt(start.Add(time.Duration(i)*time.Second), lk, time.Minute, holder(i)))
	}
	feed(t, []*history.History{h}, samples[:5]...)
	feed(t, []*history.History{h}, samples[5:]...)
	got := readLock(t, h, lk, history.SpanHour)
	if len(got.Holds) != 4 || got.Holds[0].Holder != holder(10).ID || got.Holds[1].Holder != holder(9).ID ||
		got.Holds[3].Holder != holder(7).ID {
		t.Fatalf("holds %+v, want holder 10 running and 9, 8, 7 ended", got.Holds)
	}
}

// A hold released with a flush between the sample that saw it go and the
// next one, which settles it as released (nobody took over): that flush
// wrote "through" past the first sample, and the hold must still be
// written as ended by the next flush.
func TestReleaseSettledAfterFlush(t *testing.T) {
	rdb, start := fresh(t)
	lk := name(t, "job")
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Second) }
	a := holder(1)
	h := open(t, rdb, nil)
	hs := []*history.History{h}
	feed(t, hs, lockAt(at(1), lk, 30*time.Second, a))
	feed(t, hs, lockAt(at(2), lk, 0)) // a gone: released or handed off?
	feed(t, hs, lockAt(at(3), lk, 0)) // nobody took it: released
	got := readLock(t, h, lk, history.SpanHour)
	if len(got.Holds) != 1 {
		t.Fatalf("holds = %+v, want a's one", got.Holds)
	}
	if g := got.Holds[0]; g.Holder != a.ID || !g.To.Equal(at(2).UTC()) || g.Ended != history.EndReleased {
		t.Fatalf("hold = %+v, want a's, released at %v", g, at(2).UTC())
	}
}

// What the console hears of a hold after it ended amends it, whether the
// hold is written already (the ended holds list, in Redis) or not yet
// (the tracker): an eviction is how it ended, a late release its holder
// working on past its end.
func TestLockHoldAmended(t *testing.T) {
	rdb, start := fresh(t)
	lk := name(t, "job")
	at := func(i int, plus time.Duration) time.Time { return start.Add(time.Duration(i)*time.Second + plus) }
	a, b, c := holder(1), holder(2), holder(3)
	c.Mode = "write"
	h := open(t, rdb, nil)
	ctx := t.Context()
	feed(t, []*history.History{h},
		lockAt(at(1, 0), lk, 500*time.Millisecond, a),
		lockAt(at(2, 0), lk, 30*time.Second, b), // a's lease ran out; b took it
		lockAt(at(3, 0), lk, 0),                 // b gone, not written until the next sample
	)
	if err := h.WorkedOn(ctx, lk, a.ID, at(3, 500*time.Millisecond)); err != nil { // a written: amended in Redis
		t.Fatal(err)
	}
	if err := h.Evicted(ctx, lk, b.ID, at(3, 0)); err != nil { // b not written yet: amended in the tracker
		t.Fatal(err)
	}
	feed(t, []*history.History{h},
		lockAt(at(4, 0), lk, 0),
		lockAt(at(5, 0), lk, 30*time.Second, c),
		lockAt(at(6, 0), lk, 0),
		lockAt(at(7, 0), lk, 0),
	)
	if err := h.Evicted(ctx, lk, c.ID, at(6, 0)); err != nil { // c written released
		t.Fatal(err)
	}
	feed(t, []*history.History{h})
	got := readLock(t, h, lk, history.SpanHour)
	ms := func(i int, plus time.Duration) time.Time { return at(i, plus).UTC() }
	want := []history.Hold{
		{Holder: c.ID, Mode: "write", From: ms(5, 0), To: ms(6, 0), Ended: history.EndEvicted},
		{Holder: b.ID, From: ms(2, 0), To: ms(3, 0), Ended: history.EndEvicted},
		{Holder: a.ID, From: ms(1, 0), To: ms(1, 500*time.Millisecond), Ended: history.EndExpired, WorkedTo: ms(3, 500*time.Millisecond)},
	}
	if len(got.Holds) != len(want) {
		t.Fatalf("%d holds, want %d: %+v", len(got.Holds), len(want), got.Holds)
	}
	for i, w := range want {
		g := got.Holds[i]
		if g.Holder != w.Holder || g.Mode != w.Mode || !g.From.Equal(w.From) || !g.To.Equal(w.To) || g.Ended != w.Ended ||
			!g.WorkedTo.Equal(w.WorkedTo) || g.Client == nil || g.Client.App != "orders-api" {
			t.Errorf("hold %d = %+v, want %+v", i, g, w)
		}
	}
}
