package walk

import (
	"context"
	"strconv"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/redis/go-redis/v9"
)

// The console's side of the client registry (see the registry format:
// store clients announce every object name they use in a zset scored by
// Redis TIME ms). The walker reads it incrementally in the tick pipeline,
// so what a store client creates is listed within about a second without
// any SCAN.

const (
	// registryPage bounds the names one tick reads.
	registryPage = 1000
	// registryOverlap (ms) is how far before the newest score read the next
	// read starts: announcements of the same millisecond from several
	// clients may land after the read that saw the first of them.
	registryOverlap = 1000
)

// registryReader remembers where the last read of the names zset ended.
type registryReader struct {
	from   string // ZRANGE BYSCORE min: "-inf" before the first read
	offset int64  // LIMIT offset: names at from already read (a full page of one score)
	// seen holds the names read since from, with their score, so the
	// overlap does not hand the same announcement over twice.
	seen map[string]float64
}

func newRegistryReader() *registryReader {
	return &registryReader{from: "-inf", seen: map[string]float64{}}
}

func (r *registryReader) queue(ctx context.Context, pipe redis.Pipeliner) *redis.ZSliceCmd {
	return pipe.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: inspect.RegistryNamesKey, Start: r.from, Stop: "+inf",
		ByScore: true, Offset: r.offset, Count: registryPage})
}

// result returns the names announced since the last read and moves the
// window on. A missing zset (no store client yet) is no names.
func (r *registryReader) result(cmd *redis.ZSliceCmd) []string {
	zs, err := cmd.Result()
	if err != nil || len(zs) == 0 {
		return nil
	}
	var fresh []string
	top := zs[len(zs)-1].Score
	for _, z := range zs {
		name, ok := z.Member.(string)
		if !ok {
			continue
		}
		if s, dup := r.seen[name]; dup && s == z.Score {
			continue
		}
		r.seen[name] = z.Score
		fresh = append(fresh, name)
	}
	atTop := int64(0)
	for _, z := range zs {
		if z.Score == top {
			atTop++
		}
	}
	switch {
	case len(zs) == registryPage && zs[0].Score == top:
		// A whole page of one score: page on within it.
		r.offset += atTop
	case len(zs) == registryPage:
		r.from, r.offset = formatScore(top), atTop
	default:
		r.from, r.offset = formatScore(top-registryOverlap), 0
	}
	r.forgetBefore(top - registryOverlap)
	return fresh
}

func (r *registryReader) forgetBefore(score float64) {
	for n, s := range r.seen {
		if s < score {
			delete(r.seen, n)
		}
	}
}

func formatScore(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
