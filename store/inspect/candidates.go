package inspect

import (
	"context"

	"github.com/lockwarden/lockwarden/store/inspect/conv"
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
	zsets    []string
	zreads   []zsetRead
	// sides are the side reads of the conventions that claim each string
	// (a BullMQ lock's job hash), which may also veto it.
	sides [][]conv.Side
	// members: the keys are a family's members (package family), kept
	// even when their kind is read as a family (an Envoy window).
	members bool
}

// CandidateKeys are keys of unknown kind by their Redis type.
type CandidateKeys struct {
	// Hashes are read whole (HGETALL and PTTL): the caller sized them.
	Hashes []string
	// Strings are strings p (or a store client's announcement) may list:
	// token and deadline locks, counters, the framework conventions that
	// claim their names. STRLEN, a bounded GETRANGE (a large value is
	// application data and never transferred whole) and PTTL.
	Strings []string
	// Zsets are sorted sets: their first MaxHashFields members with
	// scores, ZCARD and PTTL.
	Zsets []string
}

// QueueCandidates queues in pipe the reads of hashes and strs (see
// CandidateKeys).
func (p ObjectPatterns) QueueCandidates(ctx context.Context, pipe redis.Pipeliner, hashes, strs []string) *Candidates {
	return p.QueueCandidateKeys(ctx, pipe, CandidateKeys{Hashes: hashes, Strings: strs})
}

// QueueFamilyMembers queues the reads of strings a family's page lists:
// as QueueCandidates, but the members of families (Envoy's windows) are
// classified too, where discovery leaves them out.
func (p ObjectPatterns) QueueFamilyMembers(ctx context.Context, pipe redis.Pipeliner, strs []string) *Candidates {
	c := p.QueueCandidateKeys(ctx, pipe, CandidateKeys{Strings: strs})
	c.members = true
	return c
}

// QueueCandidateKeys queues in pipe the reads of keys.
func (p ObjectPatterns) QueueCandidateKeys(ctx context.Context, pipe redis.Pipeliner, keys CandidateKeys) *Candidates {
	c := &Candidates{patterns: p, hashes: keys.Hashes, strs: keys.Strings, zsets: keys.Zsets,
		gets: make([]*redis.MapStringStringCmd, len(keys.Hashes)), ttls: make([]*redis.DurationCmd, len(keys.Hashes)),
		reads: make([]stringRead, len(keys.Strings)), zreads: make([]zsetRead, len(keys.Zsets))}
	for i, k := range keys.Hashes {
		c.gets[i] = pipe.HGetAll(ctx, k)
		c.ttls[i] = pipe.PTTL(ctx, k)
	}
	c.sides = make([][]conv.Side, len(keys.Strings))
	cfg := p.convConfig()
	for i, k := range keys.Strings {
		c.reads[i] = queueStringRead(ctx, pipe, k)
		c.sides[i] = conv.QueueSides(ctx, pipe, cfg, k)
	}
	for i, k := range keys.Zsets {
		c.zreads[i] = queueZsetRead(ctx, pipe, k)
	}
	return c
}

// Classify classifies what was read, nowMS being Redis time: the locks and
// limiters found, hashes first, and none, the hashes read whole that are
// no object (a vanished or unreadable one is not among them, nor is a
// string that is none).
func (c *Candidates) Classify(nowMS int64) (locks []LockInfo, lims []LimiterInfo, none []string) {
	locks, lims, none = classifyHashes(c.hashes, c.gets, c.ttls, nowMS)
	for _, l := range locks {
		c.patterns.rememberConvention(l.Name, l.Kind, "hash")
	}
	for _, l := range lims {
		c.patterns.rememberConvention(l.Name, l.Kind, "hash")
	}
	add := func(lock *LockInfo, lim *LimiterInfo) {
		if lock != nil {
			locks = append(locks, *lock)
		}
		if lim != nil {
			lims = append(lims, *lim)
		}
	}
	for i, k := range c.strs {
		lock, lim := c.reads[i].classify(c.patterns, k, nowMS)
		for _, s := range c.sides[i] {
			lock = applySide(s, lock)
		}
		if lock == nil && lim == nil {
			c.patterns.conv.Forget(k)
		}
		if lim != nil && !c.members {
			// Read as a family, not listed one key a row.
			switch lim.Kind {
			case KindEnvoyRatelimit:
				c.patterns.conv.NoteEnvoyDomain(lim.Facts[conv.FactDomain], MaxFamilies)
				continue
			case KindExpressRateLimit:
				c.patterns.conv.NoteExpress()
				continue
			}
		}
		add(lock, lim)
	}
	for i, k := range c.zsets {
		lock, lim := c.zreads[i].classify(c.patterns, k, nowMS)
		if lock == nil && lim == nil && c.zreads[i].card.Err() == nil {
			none = append(none, k)
		}
		add(lock, lim)
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

func (r stringRead) classify(p ObjectPatterns, key string, nowMS int64) (*LockInfo, *LimiterInfo) {
	n, err := r.strlen.Result()
	if err != nil || n == 0 || r.value.Err() != nil {
		return nil, nil
	}
	return classifyString(p, key, r.value.Val(), n, r.pttl.Val(), nowMS)
}

// zsetRead is the pending read of one sorted set: its first members (a
// bounded read however large it is), its size and its lease.
type zsetRead struct {
	members *redis.ZSliceCmd
	card    *redis.IntCmd
	pttl    *redis.DurationCmd
}

func queueZsetRead(ctx context.Context, pipe redis.Pipeliner, key string) zsetRead {
	return zsetRead{
		members: pipe.ZRangeWithScores(ctx, key, 0, MaxHashFields-1),
		card:    pipe.ZCard(ctx, key),
		pttl:    pipe.PTTL(ctx, key),
	}
}

func (r zsetRead) classify(p ObjectPatterns, key string, nowMS int64) (*LockInfo, *LimiterInfo) {
	members, err := r.members.Result()
	if err != nil || len(members) == 0 {
		return nil, nil
	}
	return classifyZset(p, key, members, r.card.Val(), r.pttl.Val(), nowMS)
}
