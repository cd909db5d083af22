package inspect

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

// readRing turns the fields of a stats hash (layout in the comment above
// BucketMS) into bucket -> counts. Only fields of the exact form
// "<a|r|e><decimal bucket>" count, so a corrupt, hand-edited or older-layout
// field cannot be counted in the wrong place. Unparseable or negative
// counters read as zero.
func readRing(fields map[string]string) map[int64]Counts {
	out := make(map[int64]Counts, min(len(fields), 3*StatsRing))
	for k, v := range fields {
		bucket, ok := statsFieldBucket(k)
		if !ok {
			continue
		}
		c := out[bucket]
		switch k[0] {
		case 'a':
			c.Acquired += counter(v)
		case 'r':
			c.Rejected += counter(v)
		case 'e':
			c.Errors += counter(v)
		}
		out[bucket] = c
	}
	return out
}

// statsFieldBucket parses the bucket of a field named "<a|r|e><digits>".
// strconv alone would also take signs and underscores, which no script
// writes.
func statsFieldBucket(k string) (int64, bool) {
	if len(k) < 2 || len(k) > 20 || (k[0] != 'a' && k[0] != 'r' && k[0] != 'e') {
		return 0, false
	}
	for i := 1; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return 0, false
		}
	}
	b, err := strconv.ParseInt(k[1:], 10, 64)
	return b, err == nil
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

// Summarize computes the view at nowBucket: Window sums the
// windowBuckets complete buckets before nowBucket, Newest is nowBucket alone
// (still filling). Buckets outside that range, such as a slot last written a
// full ring ago or one written by a client whose clock runs ahead, are not
// counted.
func Summarize(buckets map[int64]Counts, nowBucket int64) Summary {
	sum := Summary{Bucket: nowBucket, Newest: buckets[nowBucket]}
	for b := nowBucket - windowBuckets; b < nowBucket; b++ {
		sum.Window = sum.Window.Add(buckets[b])
	}
	for b := nowBucket - RecentBuckets; b < nowBucket; b++ {
		if c := buckets[b]; c != (Counts{}) {
			if sum.Recent == nil {
				sum.Recent = make([]Counts, RecentBuckets)
			}
			sum.Recent[RecentBuckets-int(nowBucket-b)] = c
		}
	}
	return sum
}

// RecentBuckets is how many complete buckets a Summary carries one by one:
// 3 s, every complete bucket of the StatsRing a clean-up keeps (the
// newest, still filling, is the other). An idle limiter's ring is checked
// often enough to be read within it (ringCheck).
const RecentBuckets = StatsRing - 1

// summarizeFields is readRing then Summarize, for one HGETALL of a stats key.
func summarizeFields(fields map[string]string, nowBucket int64) Summary {
	return Summarize(readRing(fields), nowBucket)
}

// ReadStatsRing turns the fields of one stats hash (HGETALL of the object's
// wire.StatsKey; layout documented above wire.BucketMS) into bucket ->
// counts, with the same rules the sampler applies: only fields of the exact
// form "<a|r|e><decimal bucket>" count, unparseable or negative counters read
// as zero. Package whatif folds such buckets into a demand series.
func ReadStatsRing(fields map[string]string) map[int64]Counts { return readRing(fields) }
