package walk

import (
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"

	"github.com/lockwarden/lockwarden/store"
)

// An idle limiter is read only on its turn, seconds apart, and a server
// without keyspace notifications (Redis's default) says nothing when it is
// used again. Its stats ring keeps only the newest buckets, so a burst
// between two turns must still be read before it leaves the ring: every
// one of its attempts shows in some sample's Recent, as the console's
// history counts them.
func TestWalkIdleLimiterBurstReadWithoutNotifications(t *testing.T) {
	e := newWalkEnv(t)
	ctx := t.Context()
	name := "idle:limiter:burst"
	rl := store.New(e.rdb, nil).NewRedissonLimiter(name, nil)
	if ok, err := rl.TrySetRate(ctx, store.RateOverall, 100, time.Second); err != nil || !ok {
		t.Fatalf("set rate: %v %v", ok, err)
	}
	// Its turn never comes within the test: only a change seen some other
	// way gets it read again.
	w, err := New(e.insp, "*", &Options{NoScan: true, IdleEvery: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	limiters := []string{name}
	seen := map[int64]inspect.Counts{} // bucket -> counts, as a reader following Recent would
	tick := func() {
		t.Helper()
		s, err := w.Tick(ctx, nil, limiters)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Limiters) != 1 {
			t.Fatalf("tick listed %d limiters, want 1", len(s.Limiters))
		}
		st := s.Stats[name]
		for i, c := range st.Recent {
			seen[st.Bucket-int64(len(st.Recent)-i)] = c
		}
	}
	for range idleAfter + 1 { // read unchanged: idle
		tick()
	}
	if w.cad.objs[name].quiet < idleAfter {
		t.Fatalf("the limiter is not idle after %d unchanged reads", idleAfter+1)
	}
	const burst = 3
	for range burst {
		if r, err := rl.TryAcquire(ctx, 1); err != nil || !r.Allowed {
			t.Fatalf("acquire: %+v %v", r, err)
		}
	}
	e.counted.Take("hlen")
	// Longer than the ring keeps a bucket: what was not read by then is lost.
	end := time.Now().Add(time.Duration(inspect.StatsRing*inspect.BucketMS)*time.Millisecond + time.Second)
	for time.Now().Before(end) {
		tick()
		time.Sleep(inspect.BucketMS / 2 * time.Millisecond)
	}
	var got int64
	for _, c := range seen {
		got += c.Acquired
	}
	if got != burst {
		t.Errorf("samples showed %d of the burst's %d acquisitions (buckets %v)", got, burst, seen)
	}
	// Checked every ringCheck or so, not every tick.
	if n := e.counted.Take("hlen"); n < 1 || n > 3 {
		t.Errorf("%d ring checks in %v of ticks, want 1 to 3", n, time.Duration(inspect.StatsRing*inspect.BucketMS)*time.Millisecond+time.Second)
	}
}
