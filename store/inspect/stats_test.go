package inspect

import (
	"math/rand"
	"slices"
	"strconv"
	"testing"
)

// statsTestRing builds the fields of a stats hash by hand, as the scripts
// leave them: "<outcome><bucket>" -> count (zero counts are never written).
func statsTestRing(buckets map[int64]Counts) map[string]string {
	f := map[string]string{}
	for b, c := range buckets {
		for _, o := range []struct {
			letter byte
			n      int64
		}{{'a', c.Acquired}, {'r', c.Rejected}, {'e', c.Errors}} {
			if o.n != 0 {
				f[statsField(o.letter, b)] = strconv.FormatInt(o.n, 10)
			}
		}
	}
	return f
}

func TestSummarizeWindowAndNewest(t *testing.T) {
	const now = int64(1000)
	buckets := map[int64]Counts{
		now + 1: {Acquired: 9000, Rejected: 0, Errors: 0}, // a writer whose clock runs ahead: not yet
		now:     {Acquired: 1, Rejected: 1, Errors: 1},    // newest, still filling
		now - 1: {Acquired: 100, Rejected: 0, Errors: 0},
		now - 2: {Acquired: 0, Rejected: 20, Errors: 0},
		// now-3 is a gap: nothing happened
		now - 4:  {Acquired: 3, Rejected: 0, Errors: 2},
		now - 5:  {Acquired: 40, Rejected: 4, Errors: 0},   // oldest bucket inside the window
		now - 6:  {Acquired: 5000, Rejected: 0, Errors: 0}, // just left the window
		now - 16: {Acquired: 7000, Rejected: 7, Errors: 7}, // a full ring ago
	}
	got := Summarize(buckets, now)
	want := Summary{Bucket: now, Window: Counts{Acquired: 143, Rejected: 24, Errors: 2}, Newest: Counts{Acquired: 1, Rejected: 1, Errors: 1}}
	if !sameWindows(got, want) {
		t.Fatalf("Summarize = %+v, want %+v", got, want)
	}
	// The complete buckets one by one, oldest first, the gap included.
	wantRecent := make([]Counts, RecentBuckets)
	for b := now - RecentBuckets; b < now; b++ {
		wantRecent[RecentBuckets-int(now-b)] = buckets[b]
	}
	if !slices.Equal(got.Recent, wantRecent) {
		t.Errorf("Recent = %v, want %v", got.Recent, wantRecent)
	}
	if got := Summarize(map[int64]Counts{now: {Acquired: 1, Rejected: 0, Errors: 0}, now - 16: {Acquired: 7, Rejected: 0, Errors: 0}}, now); got.Recent != nil {
		t.Errorf("Recent of empty buckets = %v, want nil", got.Recent)
	}
}

// sameWindows compares two summaries but for their bucket-by-bucket
// Recent counts.
func sameWindows(a, b Summary) bool {
	return a.Bucket == b.Bucket && a.Window == b.Window && a.Newest == b.Newest && a.Wait == b.Wait
}

// A hash left in the slot layout of earlier versions ("b<slot>" bucket,
// "a<slot>" counters) reads as buckets 0..15, never inside a current window.
func TestSummarizeOldLayoutNotCounted(t *testing.T) {
	const now = int64(4800)
	old := map[string]string{"b0": "4800", "a0": "50", "r0": "5", "b15": "4799", "a15": "60", "e15": "1"}
	if got := Summarize(ReadStatsRing(old), now); !sameWindows(got, Summary{Bucket: now}) || got.Recent != nil {
		t.Fatalf("old layout summarized as %+v, want all zero", got)
	}
}

func TestSummarizeEmptyAndNil(t *testing.T) {
	if got := Summarize(nil, 77); !sameWindows(got, Summary{Bucket: 77}) || got.Recent != nil {
		t.Fatalf("Summarize(nil) = %+v", got)
	}
}

// The window steps by one bucket: stepping forward drops the oldest bucket
// and takes in the one that was newest.
func TestSummarizeSteps(t *testing.T) {
	buckets := map[int64]Counts{}
	for b := int64(100); b < 120; b++ {
		buckets[b] = Counts{Acquired: b}
	}
	for now := int64(106); now < 120; now++ {
		want := int64(0)
		for b := now - 5; b <= now-1; b++ {
			want += b
		}
		got := Summarize(buckets, now)
		if got.Window.Acquired != want || got.Newest.Acquired != now {
			t.Errorf("at %d: %+v, want window %d newest %d", now, got, want, now)
		}
	}
}

// Random hashes against a reference computed straight from the fields.
func TestSummarizeRandomRings(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for iter := 0; iter < 2000; iter++ {
		now := int64(rng.Intn(1_000_000) + 100)
		fields := map[string]string{}
		want := Summary{Bucket: now}
		for n := rng.Intn(60); n > 0; n-- {
			b := now - 40 + int64(rng.Intn(43)) // from 40 back to 2 ahead
			letter := "are"[rng.Intn(3)]
			k := statsField(letter, b)
			if _, dup := fields[k]; dup {
				continue
			}
			v := int64(rng.Intn(1000))
			fields[k] = strconv.FormatInt(v, 10)
			var c Counts
			switch letter {
			case 'a':
				c.Acquired = v
			case 'r':
				c.Rejected = v
			case 'e':
				c.Errors = v
			}
			switch {
			case b == now:
				want.Newest = want.Newest.Add(c)
			case b >= now-5 && b < now:
				want.Window = want.Window.Add(c)
			}
		}
		if got := summarizeFields(fields, now); !sameWindows(got, want) {
			t.Fatalf("iteration %d: got %+v, want %+v\nfields %v", iter, got, want, fields)
		}
	}
}

// statsField names the counter of one outcome ('a', 'r' or 'e') in bucket,
// as the scripts do.
func statsField(outcome byte, bucket int64) string {
	return string(outcome) + strconv.FormatInt(bucket, 10)
}
