package store

import (
	"context"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
)

// statsTestRing builds the fields of a stats hash by hand, as a script would
// leave them: slot bucket%16 holds the bucket number and its counters.
func statsTestRing(buckets map[int64]Counts) map[string]string {
	f := map[string]string{}
	for b, c := range buckets {
		s := strconv.FormatInt(b%StatsRing, 10)
		f["b"+s] = strconv.FormatInt(b, 10)
		f["a"+s] = strconv.FormatInt(c.Acquired, 10)
		f["r"+s] = strconv.FormatInt(c.Rejected, 10)
		f["e"+s] = strconv.FormatInt(c.Errors, 10)
	}
	return f
}

func TestStatsBucketOf(t *testing.T) {
	cases := []struct {
		ms   int64
		want int64
	}{
		{0, 0}, {199, 0}, {200, 1}, {399, 1}, {400, 2},
		{-1, -1}, {-200, -1}, {-201, -2},
		{1_700_000_000_123, 8_500_000_000},
	}
	for _, tc := range cases {
		if got := BucketOf(time.UnixMilli(tc.ms)); got != tc.want {
			t.Errorf("BucketOf(%d ms) = %d, want %d", tc.ms, got, tc.want)
		}
	}
}

func TestStatsReadRing(t *testing.T) {
	const now = int64(8_500_000_000) // slot 0
	fields := statsTestRing(map[int64]Counts{
		now:     {1, 2, 3},
		now - 1: {10, 0, 0},
		now - 5: {0, 7, 0},
	})
	// A slot claiming a bucket that does not belong in it is corrupt.
	fields["b9"] = strconv.FormatInt(now-1, 10)
	fields["a9"] = "1000"
	// A slot with an unreadable bucket number is ignored.
	fields["b4"], fields["a4"] = "soon", "5"
	// Missing and garbage counters read as zero.
	fields["b3"], fields["a3"], fields["r3"] = strconv.FormatInt(now-13, 10), "x", "-4"

	got := readRing(fields)
	want := map[int64]Counts{
		now:      {1, 2, 3},
		now - 1:  {10, 0, 0},
		now - 5:  {0, 7, 0},
		now - 13: {},
	}
	if len(got) != len(want) {
		t.Fatalf("readRing = %v, want %v", got, want)
	}
	for b, c := range want {
		if g, ok := got[b]; !ok || g != c {
			t.Errorf("bucket %d = %+v (present %v), want %+v", b, g, ok, c)
		}
	}
	if len(readRing(nil)) != 0 || len(readRing(map[string]string{"a1": "5"})) != 0 {
		t.Error("a ring without bucket numbers must read as empty")
	}
}

func TestSummarizeWindowAndNewest(t *testing.T) {
	const now = int64(1000)
	buckets := map[int64]Counts{
		now + 1: {9000, 0, 0}, // a writer whose clock runs ahead: not yet
		now:     {1, 1, 1},    // newest, still filling
		now - 1: {100, 0, 0},
		now - 2: {0, 20, 0},
		// now-3 is a gap: nothing happened
		now - 4:  {3, 0, 2},
		now - 5:  {40, 4, 0},   // oldest bucket inside the window
		now - 6:  {5000, 0, 0}, // just left the window
		now - 16: {7000, 7, 7}, // a full ring ago
	}
	got := Summarize(buckets, now)
	want := Summary{Bucket: now, Window: Counts{143, 24, 2}, Newest: Counts{1, 1, 1}}
	if got != want {
		t.Fatalf("Summarize = %+v, want %+v", got, want)
	}
}

// A slot still holding the bucket from StatsRing buckets ago (the object was
// idle since) shares its slot with the newest bucket and must not count as it.
func TestSummarizeStaleSlotNotCounted(t *testing.T) {
	const now = int64(4800) // slot 0
	ring := statsTestRing(map[int64]Counts{
		now - StatsRing:     {50, 0, 0}, // slot 0, like now
		now - StatsRing - 1: {60, 0, 0}, // slot 15, like now-1
		now - StatsRing + 1: {70, 0, 0}, // slot 1, a later bucket still old
	})
	if got := Summarize(readRing(ring), now); got != (Summary{Bucket: now}) {
		t.Fatalf("stale ring summarized as %+v, want all zero", got)
	}
}

func TestSummarizeEmptyAndNil(t *testing.T) {
	if got := Summarize(nil, 77); got != (Summary{Bucket: 77}) {
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

// Random rings against a reference computed straight from the fields.
func TestSummarizeRandomRings(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for iter := 0; iter < 2000; iter++ {
		now := int64(rng.Intn(1_000_000) + 100)
		fields := map[string]string{}
		for s := 0; s < StatsRing; s++ {
			if rng.Intn(4) == 0 {
				continue // slot never written
			}
			// Any bucket from 40 back to 2 ahead that lands in slot s.
			b := now - 40 + int64(rng.Intn(43))
			b -= b % StatsRing
			b += int64(s)
			ss := strconv.Itoa(s)
			fields["b"+ss] = strconv.FormatInt(b, 10)
			fields["a"+ss] = strconv.Itoa(rng.Intn(1000))
			fields["r"+ss] = strconv.Itoa(rng.Intn(1000))
			fields["e"+ss] = strconv.Itoa(rng.Intn(10))
		}
		var want Summary
		want.Bucket = now
		for s := 0; s < StatsRing; s++ {
			ss := strconv.Itoa(s)
			raw, ok := fields["b"+ss]
			if !ok {
				continue
			}
			b, _ := strconv.ParseInt(raw, 10, 64)
			a, _ := strconv.ParseInt(fields["a"+ss], 10, 64)
			r, _ := strconv.ParseInt(fields["r"+ss], 10, 64)
			e, _ := strconv.ParseInt(fields["e"+ss], 10, 64)
			c := Counts{a, r, e}
			switch {
			case b == now:
				want.Newest = c
			case b >= now-5 && b < now:
				want.Window = want.Window.Add(c)
			}
		}
		if got := summarizeFields(fields, now); got != want {
			t.Fatalf("iteration %d: got %+v, want %+v\nfields %v", iter, got, want, fields)
		}
	}
}

// recordAt is the documented writer algorithm as a test-only script, with
// now_ms passed in so the test controls the clock.
const statsRecordAt = `
local stats, now_ms, outcome = KEYS[1], tonumber(ARGV[1]), ARGV[2]
local bucket = math.floor(now_ms / 200)
local s = bucket % 16
if tonumber(redis.call('HGET', stats, 'b' .. s)) ~= bucket then
  redis.call('HSET', stats, 'b' .. s, bucket, 'a' .. s, 0, 'r' .. s, 0, 'e' .. s, 0)
end
redis.call('HINCRBY', stats, outcome .. s, 1)
redis.call('PEXPIRE', stats, 5000)
return bucket`

// A ring written by the documented algorithm in real Redis, including slots
// reused after a full turn, reads back to the right window.
func TestStatsRingFromRedis(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	key := StatsKey(redistest.Prefix(t) + "limiter")
	t.Cleanup(func() { rdb.Del(context.Background(), key) })

	const base = int64(1_700_000_000_000) // bucket 8_500_000_000, slot 0
	record := func(ms int64, outcome string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := rdb.Eval(ctx, statsRecordAt, []string{key}, ms, outcome).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Bucket base+0 .. base+3 first, then a full ring later buckets 16..21,
	// which overwrite slots 0..3 and add 4, 5.
	record(base, "a", 9)
	record(base+BucketMS*3, "r", 9)
	for k := int64(16); k <= 21; k++ {
		record(base+BucketMS*k+57, "a", int(k))
		record(base+BucketMS*k+199, "r", 1)
	}
	record(base+BucketMS*21+10, "e", 2)

	fields, err := rdb.HGetAll(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	now := BucketOf(time.UnixMilli(base)) + 21
	got := summarizeFields(fields, now)
	want := Summary{
		Bucket: now,
		Window: Counts{Acquired: 16 + 17 + 18 + 19 + 20, Rejected: 5},
		Newest: Counts{Acquired: 21, Rejected: 1, Errors: 2},
	}
	if got != want {
		t.Fatalf("summary = %+v, want %+v\nring %v", got, want, fields)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > StatsTTLMS*time.Millisecond {
		t.Errorf("stats ring PTTL = %v, want (0, %dms]", ttl, StatsTTLMS)
	}
}
