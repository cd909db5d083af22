package store

import (
	"strconv"
	"time"
)

// Reading the stats ring (layout in the comment above BucketMS) and the
// rolling window the console shows. The maths is pure so that it can be
// tested against hand-written rings without a clock.

// windowBuckets is how many complete buckets make up the rolling window.
const windowBuckets = WindowMS / BucketMS

// BucketOf returns the stats bucket that time t falls in. Scripts compute the
// same number from Redis TIME, so pass Redis time (Sample.At), not the local
// clock, when comparing with what they wrote.
func BucketOf(t time.Time) int64 {
	return floorDiv(t.UnixMilli(), BucketMS)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// readRing turns the fields of a stats hash into bucket -> counts. A slot is
// trusted only when the bucket number it claims belongs in it (bucket mod
// StatsRing), so a corrupt or hand-edited field cannot be counted twice or
// in the wrong place. Missing counters read as zero; a slot without a
// parseable bucket number is ignored.
func readRing(fields map[string]string) map[int64]Counts {
	out := make(map[int64]Counts, StatsRing)
	for s := int64(0); s < StatsRing; s++ {
		slot := strconv.FormatInt(s, 10)
		raw, ok := fields["b"+slot]
		if !ok {
			continue
		}
		bucket, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || bucket < 0 || bucket%StatsRing != s {
			continue
		}
		out[bucket] = Counts{
			Acquired: counter(fields["a"+slot]),
			Rejected: counter(fields["r"+slot]),
			Errors:   counter(fields["e"+slot]),
		}
	}
	return out
}

// counter reads one HINCRBY counter; anything unparseable or negative counts
// as nothing rather than poisoning the window.
func counter(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Summarize computes seed 001's view at nowBucket: Window sums the
// windowBuckets complete buckets before nowBucket, Newest is nowBucket alone
// (still filling). Buckets outside that range, such as a slot last written a
// full ring ago or one written by a client whose clock runs ahead, are not
// counted.
func Summarize(buckets map[int64]Counts, nowBucket int64) Summary {
	sum := Summary{Bucket: nowBucket, Newest: buckets[nowBucket]}
	for b := nowBucket - windowBuckets; b < nowBucket; b++ {
		sum.Window = sum.Window.Add(buckets[b])
	}
	return sum
}

// summarizeFields is readRing then Summarize, for one HGETALL of a stats key.
func summarizeFields(fields map[string]string, nowBucket int64) Summary {
	return Summarize(readRing(fields), nowBucket)
}
