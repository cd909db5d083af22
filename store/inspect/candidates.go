package inspect

import (
	"context"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Reading keys whose kind is not known yet. The walk (package walk) lists
// names by SCAN, announcement and notification, sizes the hashes among
// them and reads the small ones through Candidates; a family page (package
// family) reads its counters the same way. Classification stays here,
// with the kinds.

// MaxHashFields bounds the hashes worth reading in full: no known layout
// has more fields (a lock 1, a token bucket 5, a Redisson limiter 4, a
// read-write lock one per concurrent reader, which is the one that needs
// the headroom), so the walk sizes a hash with HLEN before reading it, and
// a larger one is never transferred.
const MaxHashFields = 64

// Candidates are keys of unknown kind read in one pipeline, to classify
// once it ran.
type Candidates struct {
	patterns ObjectPatterns
	hashes   []string
	gets     []*redis.MapStringStringCmd
	ttls     []*redis.DurationCmd
	strs     []string
	reads    []stringRead
}

// QueueCandidates queues in pipe the reads of hashes (HGETALL and PTTL)
// and of strs, strings p (or a store client's announcement) may list as
// token locks, deadline locks or counters: STRLEN, a bounded GETRANGE (a
// large value is application data and never transferred whole) and PTTL.
func (p ObjectPatterns) QueueCandidates(ctx context.Context, pipe redis.Pipeliner, hashes, strs []string) *Candidates {
	c := &Candidates{patterns: p, hashes: hashes, strs: strs,
		gets: make([]*redis.MapStringStringCmd, len(hashes)), ttls: make([]*redis.DurationCmd, len(hashes)),
		reads: make([]stringRead, len(strs))}
	for i, k := range hashes {
		c.gets[i] = pipe.HGetAll(ctx, k)
		c.ttls[i] = pipe.PTTL(ctx, k)
	}
	for i, k := range strs {
		c.reads[i] = queueStringRead(ctx, pipe, k)
	}
	return c
}

// Classify classifies what was read, nowMS being Redis time: the locks and
// limiters found, hashes first, and none, the hashes read whole that are
// no object (a vanished or unreadable one is not among them, nor is a
// string that is none).
func (c *Candidates) Classify(nowMS int64) (locks []LockInfo, lims []LimiterInfo, none []string) {
	locks, lims, none = classifyHashes(c.hashes, c.gets, c.ttls, nowMS)
	for i, k := range c.strs {
		lock, lim := c.reads[i].classify(c.patterns, k)
		if lock != nil {
			locks = append(locks, *lock)
		}
		if lim != nil {
			lims = append(lims, *lim)
		}
	}
	return locks, lims, none
}

// classifyHashes classifies the hashes read by HGETALL and PTTL, keys[i]
// by gets[i] and ttls[i]; none are the hashes read whole that are no
// object (a vanished or unreadable one is not among them).
func classifyHashes(keys []string, gets []*redis.MapStringStringCmd, ttls []*redis.DurationCmd, nowMS int64) (locks []LockInfo, lims []LimiterInfo, none []string) {
	for i, k := range keys {
		fields, err := gets[i].Result()
		if err != nil || len(fields) == 0 {
			continue
		}
		if lock, ok := classifyLock(k, fields, ttls[i].Val()); ok {
			locks = append(locks, lock)
		} else if lim, ok := classifyLimiter(k, fields, nowMS); ok {
			lims = append(lims, lim)
		} else {
			none = append(none, k)
		}
	}
	return locks, lims, none
}

// stringRead is the pending read of one string object.
type stringRead struct {
	strlen *redis.IntCmd
	value  *redis.StringCmd
	pttl   *redis.DurationCmd
}

func queueStringRead(ctx context.Context, pipe redis.Pipeliner, key string) stringRead {
	return stringRead{
		strlen: pipe.StrLen(ctx, key),
		value:  pipe.GetRange(ctx, key, 0, wire.MaxStringValue-1),
		pttl:   pipe.PTTL(ctx, key),
	}
}

func (r stringRead) classify(p ObjectPatterns, key string) (*LockInfo, *LimiterInfo) {
	n, err := r.strlen.Result()
	if err != nil || n == 0 || r.value.Err() != nil {
		return nil, nil
	}
	return classifyString(p, key, r.value.Val(), n, r.pttl.Val())
}
