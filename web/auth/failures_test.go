package auth

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// A source guessing tokens gets its free failures, then waits that double
// with each further failure. Another replica over the same Redis makes it
// wait too, and sources other than the guesser are not held up.
func TestFailuresBackOffPerSourceAndShareAcrossReplicas(t *testing.T) {
	rdb := redistest.Client(t)
	keys := testKeys(t, rdb)
	opts := &FailureOptions{FreePerSource: 3, FirstWait: time.Second, MaxWaitSource: 8 * time.Second}
	one, two := NewFailures(rdb, keys, opts), NewFailures(rdb, keys, opts)
	ctx, now := t.Context(), time.Now()
	var waits []time.Duration
	for range 7 {
		w, err := one.Fail(ctx, "192.0.2.7", ViaBearer, now)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	want := []time.Duration{0, 0, 0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	w, err := two.Wait(ctx, "192.0.2.7", now)
	if err != nil || w <= 7*time.Second || w > 8*time.Second {
		t.Fatalf("the other replica: wait %v, %v; want about 8s", w, err)
	}
	if w, _ := two.Wait(ctx, "192.0.2.8", now); w != 0 {
		t.Fatalf("another source waits %v", w)
	}
	if c := one.Counts(); c.Bearer != 7 || c.SignIn != 0 {
		t.Fatalf("counts %+v", c)
	}
	if c := two.Counts(); c.Limited != 1 {
		t.Fatalf("the refused check was not counted as limited: %+v", c)
	}
}

// Guessing from many addresses, each within its free failures, slows
// every guesser once all of them together pass theirs: from then on each
// wrong token, a new source's first included, makes its source wait. A
// source that has not failed is never held up by the flood: its token is
// checked at once, so the admin's correct token still gets in.
func TestFailuresLimitEverySourceTogether(t *testing.T) {
	rdb := redistest.Client(t)
	keys := testKeys(t, rdb)
	f := NewFailures(rdb, keys, &FailureOptions{FreePerSource: 5, FreeTotal: 20, MaxWaitTotal: time.Minute})
	ctx, now := t.Context(), time.Now()
	src := func(i int) string { return Source(fmt.Sprintf("2001:db8:0:%x::1", i)) }
	for i := range 20 {
		if w, err := f.Fail(ctx, src(i), ViaSignIn, now); err != nil || w != 0 {
			t.Fatalf("failure %d: wait %v, %v", i, w, err)
		}
	}
	if w, _ := f.Fail(ctx, src(20), ViaSignIn, now); w != time.Second {
		t.Fatalf("the 21st failure overall, a new source's first: wait %v, want 1s", w)
	}
	if w, _ := f.Fail(ctx, src(21), ViaSignIn, now); w != 2*time.Second {
		t.Fatalf("the 22nd failure overall: wait %v, want 2s", w)
	}
	if w, _ := NewFailures(rdb, keys, nil).Wait(ctx, src(21), now); w <= time.Second {
		t.Fatalf("another replica: the 22nd failure's source waits %v, want about 2s", w)
	}
	for _, clean := range []string{Source("198.51.100.1"), src(0)} {
		if w, _ := NewFailures(rdb, keys, nil).Wait(ctx, clean, now); w != 0 {
			t.Fatalf("%s, within its own free failures, waits %v for the flood of others", clean, w)
		}
	}
}

// With Redis down each replica counts alone by the same rules: per
// source, and every source together.
func TestFailuresLocallyWhileRedisDown(t *testing.T) {
	f := NewFailures(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}), NewKeys("down"),
		&FailureOptions{FreePerSource: 2, FreeTotal: 4, FirstWait: time.Second})
	ctx, now := t.Context(), time.Now()
	var waits []time.Duration
	for _, s := range []string{"192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"} {
		w, err := f.Fail(ctx, s, ViaBearer, now)
		if err != nil {
			t.Fatal(err)
		}
		waits = append(waits, w)
	}
	want := []time.Duration{0, 0, time.Second, 0, time.Second, 2 * time.Second}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	if w, _ := f.Wait(ctx, "192.0.2.9", now); w != 0 {
		t.Fatalf("a source that never failed waits %v", w)
	}
	if w, _ := f.Wait(ctx, "192.0.2.4", now); w != 2*time.Second {
		t.Fatalf("the last failing source waits %v, want 2s", w)
	}
}

// Summaries keep every source's count for the audit trail and start
// afresh after Drain.
func TestFailureSummaries(t *testing.T) {
	rdb := redistest.Client(t)
	f := NewFailures(rdb, testKeys(t, rdb), &FailureOptions{FreePerSource: 1000, FreeTotal: 1000})
	ctx, now := t.Context(), time.Now()
	for i := range 30 {
		if _, err := f.Fail(ctx, []string{"192.0.2.1", "192.0.2.2"}[i%2], ViaBearer, now.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	got := f.Drain()
	if len(got) != 2 || got[0].Failed+got[1].Failed != 30 || got[0].Failed != 15 {
		t.Fatalf("summaries %+v", got)
	}
	if r := f.Recent(now.Add(time.Second)); r != 30 {
		t.Fatalf("Recent = %d just after 30 failures", r)
	}
	if r := f.Recent(now.Add(RecentSpan + time.Second)); r != 0 {
		t.Fatalf("Recent = %d a minute later", r)
	}
	if len(f.Drain()) != 0 {
		t.Fatal("Drain did not start afresh")
	}
}

func TestSourceGroupsIPv6By64(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1":               "192.0.2.1",
		"2001:db8:1:2:3:4:5:6":    "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::9":    "2001:db8:1:2::/64",
		"::ffff:192.0.2.1":        "192.0.2.1",
		"not an address (a test)": "not an address (a test)",
	} {
		if got := Source(in); got != want {
			t.Errorf("Source(%q) = %q, want %q", in, got, want)
		}
	}
}
