package stats

import (
	"strconv"
	"testing"
	"time"
)

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
	const now = int64(8_500_000_000)
	field := func(outcome byte, bucket int64) string { return string(outcome) + strconv.FormatInt(bucket, 10) }
	fields := map[string]string{ // as the scripts leave them: zero counts are never written
		field('a', now): "1", field('r', now): "2", field('e', now): "3",
		field('a', now-1): "10",
		field('r', now-5): "7",
	}
	// Names no script writes are ignored: a sign, a stray letter, no number,
	// an unknown outcome, the old slot layout's bucket field.
	for _, k := range []string{"a+8500000000", "a-1", "r8500000000x", "a", "x8500000000", "b3", "A8500000000", "a 8500000000"} {
		fields[k] = "1000"
	}
	// Garbage and negative counters read as zero.
	fields[field('a', now-13)], fields[field('r', now-13)] = "x", "-4"

	got := ReadRing(fields)
	want := map[int64]Counts{
		now:      {1, 2, 3},
		now - 1:  {10, 0, 0},
		now - 5:  {0, 7, 0},
		now - 13: {},
	}
	if len(got) != len(want) {
		t.Fatalf("ReadRing = %v, want %v", got, want)
	}
	for b, c := range want {
		if g, ok := got[b]; !ok || g != c {
			t.Errorf("bucket %d = %+v (present %v), want %+v", b, g, ok, c)
		}
	}
	if len(ReadRing(nil)) != 0 || len(ReadRing(map[string]string{"b1": "5"})) != 0 {
		t.Error("a hash without counters must read as empty")
	}
}
