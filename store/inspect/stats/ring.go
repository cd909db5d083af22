// Package stats reads the stats ring lockwarden's scripts keep beside
// every object (layout in the comment above wire.BucketMS): outcomes by
// bucket, and the wait fields lock scripts add, kept beyond the ring by
// a WaitBook. The maths is pure so that it can be tested against
// hand-written rings without a clock; package inspect reads the rings and
// builds its Summary from them.
package stats

import (
	"strconv"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Counts are outcomes of acquire attempts.
type Counts struct {
	Acquired int64 `json:"acquired"`
	Rejected int64 `json:"rejected"`
	Errors   int64 `json:"errors"`
}

// Add returns c + o.
func (c Counts) Add(o Counts) Counts {
	return Counts{c.Acquired + o.Acquired, c.Rejected + o.Rejected, c.Errors + o.Errors}
}

// WindowBuckets is how many complete buckets make up the rolling window.
const WindowBuckets = wire.WindowMS / wire.BucketMS

// BucketOf returns the stats bucket that time t falls in. Scripts compute the
// same number from Redis TIME, so pass Redis time (inspect.Sample.At), not the local
// clock, when comparing with what they wrote.
func BucketOf(t time.Time) int64 {
	return floorDiv(t.UnixMilli(), wire.BucketMS)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// ReadRing turns the fields of a stats hash (the object's wire.StatsKey;
// layout in the comment above wire.BucketMS) into bucket -> counts. Only fields of the exact form
// "<a|r|e><decimal bucket>" count, so a corrupt, hand-edited or older-layout
// field cannot be counted in the wrong place. Unparseable or negative
// counters read as zero.
func ReadRing(fields map[string]string) map[int64]Counts {
	out := make(map[int64]Counts, min(len(fields), 3*wire.StatsRing))
	for k, v := range fields {
		bucket, ok := statsFieldBucket(k)
		if !ok {
			continue
		}
		c := out[bucket]
		switch k[0] {
		case 'a':
			c.Acquired += Counter(v)
		case 'r':
			c.Rejected += Counter(v)
		case 'e':
			c.Errors += Counter(v)
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

// Counter reads one HINCRBY counter; anything unparseable or negative counts
// as nothing rather than poisoning the window.
func Counter(s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
