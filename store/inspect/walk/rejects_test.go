package walk

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// fillAppHashes writes n small application hashes (three fields, no known
// layout) and large ones (more fields than any layout) under prefix.
func fillAppHashes(t *testing.T, e walkEnv, prefix string, small, large int) {
	t.Helper()
	ctx := t.Context()
	p := e.rdb.Pipeline()
	for i := range small {
		p.HSet(ctx, fmt.Sprintf("%s:user:%d", prefix, i), "name", "someone", "plan", "pro", "visits", i)
	}
	for i := range large {
		var fields []any
		for f := range inspect.MaxHashFields + 6 {
			fields = append(fields, fmt.Sprintf("f%d", f), f)
		}
		p.HSet(ctx, fmt.Sprintf("%s:big:%d", prefix, i), fields...)
	}
	for i := range 3000 { // strings, so a pass takes several pages
		p.Set(ctx, fmt.Sprintf("%s:str:%d", prefix, i), "v", 0)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatal(err)
	}
}

// walkedOnce is a walker (10 s passes) that has ended one pass over e.
func walkedOnce(t *testing.T, e walkEnv) *Walker {
	t.Helper()
	w, err := New(e.insp, "*", &Options{Tick: 200 * time.Millisecond, Pass: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tickPasses(t, w, 1)
	return w
}

// rewriteAsLock deletes name and writes a foreign lock there.
func rewriteAsLock(t *testing.T, e walkEnv, name string) {
	t.Helper()
	if err := e.rdb.Del(t.Context(), name).Err(); err != nil {
		t.Fatal(err)
	}
	e.foreignLock(t, name)
}

// tickPasses ticks w until n more passes have ended, then three more ticks
// (a page's keys are typed, sized and read by the three ticks after it),
// bounded.
func tickPasses(t *testing.T, w *Walker, n int64) {
	t.Helper()
	want := w.Status().Passes + n
	for i := 0; i < 500 && w.Status().Passes < want; i++ {
		if _, err := w.Tick(t.Context(), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if w.Status().Passes < want {
		t.Fatalf("%d passes did not end in 500 ticks: %+v", n, w.Status())
	}
	for range 3 {
		if _, err := w.Tick(t.Context(), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// The walk used to size and read every application hash again on every
// pass; the ones it found to be no object are not examined again for a few
// passes.
func TestWalkRemembersRejectedHashes(t *testing.T) {
	e := newWalkEnv(t)
	fillAppHashes(t, e, "app", 300, 5)
	w := walkedOnce(t, e)
	if got := e.counted.Take("hlen"); got < 305 {
		t.Fatalf("the first pass sized %d hashes, want every one of 305", got)
	}
	if got := e.counted.Take("hgetall"); got < 300 {
		t.Fatalf("the first pass read %d hashes, want the 300 small ones", got)
	}
	remembered := w.Status().RejectsRemembered
	tickPasses(t, w, 1)
	if hlen, hgetall := e.counted.Take("hlen"), e.counted.Take("hgetall"); hlen != 0 || hgetall != 0 {
		t.Errorf("the second pass sized %d and read %d hashes already found to be no object", hlen, hgetall)
	}
	// The 3,000 strings no pattern or convention claims are typed once
	// and remembered too.
	if remembered != 3305 {
		t.Errorf("remembered %d rejected keys after the first pass, want 3305 (305 hashes, 3000 strings)", remembered)
	}
	if st := w.Status(); st.RejectsSkipped < 305 {
		t.Errorf("status counts %d listings skipped, want at least 305", st.RejectsSkipped)
	}
}

// A rejected name is examined again after a few passes: a key deleted and
// written again as a foreign lock under the same name is still found.
func TestWalkReexaminesRejectedHashes(t *testing.T) {
	e := newWalkEnv(t)
	fillAppHashes(t, e, "app", 10, 0)
	name := "app:user:3"
	w := walkedOnce(t, e)
	if w.Status().RejectsRemembered != 3010 {
		t.Fatalf("status %+v", w.Status())
	}
	rewriteAsLock(t, e, name)
	var locks []string
	passes := w.Status().Passes
	for i := 0; i < 1000; i++ { // bounded: a pass is a few ticks
		src, ok := tickUntil(t, w, &locks, name, 1)
		if ok {
			if src != inspect.SourceScan {
				t.Errorf("found by %q", src)
			}
			if n := w.Status().Passes - passes; n < rejectPasses-1 {
				t.Errorf("found after %d passes: the rejection was not remembered", n)
			}
			return
		}
	}
	t.Fatalf("a lock written over a rejected hash was not found in %d passes", w.Status().Passes-passes)
}

// A keyspace notification names a key the walk rejected: it is examined at
// once, not when the memory lets it go.
func TestWalkNotifiedNameBypassesRejects(t *testing.T) {
	e := newWalkEnv(t)
	fillAppHashes(t, e, "app", 10, 0)
	name := "app:user:4"
	w := walkedOnce(t, e)
	rewriteAsLock(t, e, name)
	w.Suggest([]string{name})
	var locks []string
	if src, ok := tickUntil(t, w, &locks, name, 4); !ok || src != inspect.SourceNotified {
		t.Fatalf("a notified lock over a rejected hash: found %v by %q", ok, src)
	}
}

func TestRejectMemoryForgetsAndBounds(t *testing.T) {
	m := newRejectMemory()
	m.add("a", 3)
	for pass := int64(3); pass < 3+rejectPasses; pass++ {
		if !m.skip("a", pass) {
			t.Fatalf("pass %d examines a name rejected in pass 3", pass)
		}
	}
	forgot := false
	for pass := int64(3 + rejectPasses); pass < 3+rejectPasses+rejectJitter; pass++ {
		if !m.skip("a", pass) {
			forgot = true
			break
		}
	}
	if !forgot || m.len() != 0 {
		t.Fatalf("never forgotten (forgot %v, %d left)", forgot, m.len())
	}
	m.add("b", 0)
	m.sweep(rejectPasses + rejectJitter)
	if m.len() != 0 {
		t.Errorf("sweep left %d names due", m.len())
	}
	m.add("c", 0)
	m.drop("c")
	if m.skip("c", 0) {
		t.Error("a dropped name is still skipped")
	}
	m.max = 2
	for _, n := range []string{"d", "e", "f"} {
		m.add(n, 0)
	}
	if m.len() != 2 || m.skip("f", 0) {
		t.Errorf("bound 2 holds %d names", m.len())
	}
}

// The console's first full pass (Discover) reads every hash; the walk that
// follows it does not read the ones it found to be no object again.
func TestWalkAfterDiscoverSkipsItsRejects(t *testing.T) {
	e := newWalkEnv(t)
	fillAppHashes(t, e, "app", 200, 3)
	e.foreignLock(t, "orders:lock:seen-by-discover")
	w, err := New(e.insp, "*", &Options{Tick: 200 * time.Millisecond, Pass: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d, err := w.Discover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Locks) != 1 || d.Skipped != 3 {
		t.Fatalf("Discover found %d locks, skipped %d", len(d.Locks), d.Skipped)
	}
	e.counted.Take("hlen")
	e.counted.Take("hgetall")
	locks := []string{"orders:lock:seen-by-discover"}
	for i := 0; i < 500 && w.Status().Passes < 1; i++ {
		if _, err := w.Tick(t.Context(), locks, nil); err != nil {
			t.Fatal(err)
		}
	}
	hlen, hgetall := e.counted.Take("hlen"), e.counted.Take("hgetall")
	if hlen != 0 {
		t.Errorf("the walk's first pass sized %d hashes Discover had rejected", hlen)
	}
	if hgetall >= 200 { // the known lock's own reads are a few a tick
		t.Errorf("the walk's first pass sent %d HGETALL: it read the 200 rejected hashes again", hgetall)
	}
}

// A walker's full passes (a Cluster's, or with string patterns, run every
// pass duration) share the memory too: the second pass neither sizes nor
// reads what the first found to be no object, and still lists every
// object.
func TestDiscoverRemembersRejectsAcrossPasses(t *testing.T) {
	e := newWalkEnv(t)
	fillAppHashes(t, e, "app", 200, 3)
	e.foreignLock(t, "orders:lock:a")
	w, err := New(e.insp, "*", nil)
	if err != nil {
		t.Fatal(err)
	}
	for pass := 1; pass <= 2; pass++ {
		d, err := w.Discover(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		hlen, hgetall := e.counted.Take("hlen"), e.counted.Take("hgetall")
		if len(d.Locks) != 1 || d.Locks[0].Name != "orders:lock:a" {
			t.Fatalf("pass %d listed %+v", pass, d.Locks)
		}
		switch {
		case pass == 1 && (hlen < 204 || hgetall < 201):
			t.Fatalf("the first pass sized %d and read %d hashes, want every one", hlen, hgetall)
		// The lock's own reads: its hash, hold times, store's waiter
		// entries and poll waiters (HGETALL each).
		case pass == 2 && (hlen > 1 || hgetall > 4):
			t.Errorf("the second pass sized %d and read %d hashes: the first pass's rejects again", hlen, hgetall)
		}
	}
}
