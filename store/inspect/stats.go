package inspect

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/stats"
)

// The rolling window the console shows, from a stats ring package stats
// reads.

// BucketOf is stats.BucketOf.
func BucketOf(t time.Time) int64 { return stats.BucketOf(t) }

// Summarize computes the view at nowBucket: Window sums the
// stats.WindowBuckets complete buckets before nowBucket, Newest is nowBucket alone
// (still filling). Buckets outside that range, such as a slot last written a
// full ring ago or one written by a client whose clock runs ahead, are not
// counted.
func Summarize(buckets map[int64]Counts, nowBucket int64) Summary {
	sum := Summary{Bucket: nowBucket, Newest: buckets[nowBucket]}
	for b := nowBucket - stats.WindowBuckets; b < nowBucket; b++ {
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

// summarizeFields is stats.ReadRing then Summarize, for one HGETALL of a stats key.
func summarizeFields(fields map[string]string, nowBucket int64) Summary {
	return Summarize(stats.ReadRing(fields), nowBucket)
}

// ReadStatsRing turns the fields of one stats hash (HGETALL of the object's
// wire.StatsKey; layout documented above wire.BucketMS) into bucket ->
// counts, with the same rules the sampler applies: only fields of the exact
// form "<a|r|e><decimal bucket>" count, unparseable or negative counters read
// as zero. Package whatif folds such buckets into a demand series.
func ReadStatsRing(fields map[string]string) map[int64]Counts { return stats.ReadRing(fields) }
