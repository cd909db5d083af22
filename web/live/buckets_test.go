package live

import (
	"slices"
	"testing"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// The ring keeps each complete bucket once, in order, however the ticks
// fall: a tick per bucket, a late tick (its Summary still carries the
// buckets it missed), ticks that did not read the limiter (no Recent),
// and a gap longer than Redis keeps (stored empty, as the history counts
// it); it keeps the newest buckets it has room for.
func TestWindowsBuckets(t *testing.T) {
	h := newWindows(40)
	// The demand: bucket b had b acquired and 1 rejected.
	summary := func(bucket int64) inspect.Summary {
		st := inspect.Summary{Bucket: bucket, Recent: make([]inspect.Counts, inspect.RecentBuckets)}
		for i := range st.Recent {
			b := bucket - int64(inspect.RecentBuckets) + int64(i)
			st.Recent[i] = inspect.Counts{Acquired: b, Rejected: 1}
		}
		return st
	}
	tick := func(bucket int64, read bool) {
		st := inspect.Summary{Bucket: bucket}
		if read {
			st = summary(bucket)
		}
		h.PushTick(bucket*inspect.BucketMS, []inspect.LimiterInfo{{Name: "a"}}, map[string]inspect.Summary{"a": st})
	}
	for b := int64(1000); b < 1010; b++ {
		tick(b, true)
	}
	tick(1012, false) // not read
	tick(1017, true)  // late: 1008..1015 complete since
	first, got := h.Buckets("a")
	want := []inspect.Counts{}
	for b := int64(1000 - inspect.RecentBuckets); b <= 1015; b++ {
		want = append(want, inspect.Counts{Acquired: b, Rejected: 1})
	}
	if first != 1000-int64(inspect.RecentBuckets) || !slices.Equal(got, want) {
		t.Fatalf("buckets from %d: %v, want from %d: %v", first, got, 1000-inspect.RecentBuckets, want)
	}
	// 20 buckets unseen: those older than the Summary's are stored empty;
	// the ring keeps its newest 40.
	tick(1017+20+2, true)
	first, got = h.Buckets("a")
	if first != 1037-39 || len(got) != 40 || got[len(got)-1] != (inspect.Counts{Acquired: 1037, Rejected: 1}) {
		t.Fatalf("after a gap: from %d, %d buckets, newest %+v", first, len(got), got[len(got)-1])
	}
	for b := int64(1016); b < 1037-int64(inspect.RecentBuckets)+1; b++ {
		if c := got[b-first]; c != (inspect.Counts{}) {
			t.Errorf("bucket %d unseen: %+v, want empty", b, c)
		}
	}
	// Idle longer than the ring: it starts again.
	tick(5000, true)
	if first, got = h.Buckets("a"); first != 5000-int64(inspect.RecentBuckets) || len(got) != inspect.RecentBuckets-1 {
		t.Fatalf("after a long idle: from %d, %d buckets", first, len(got))
	}
	h.retain(map[string]bool{})
	if _, got := h.Buckets("a"); got != nil {
		t.Error("retain kept the buckets of a limiter that is gone")
	}
}
