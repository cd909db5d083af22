package inspect

import (
	"context"
	"errors"

	"github.com/lockwarden/lockwarden/store"
	"github.com/redis/go-redis/v9"
)

// Light reads of idle hash locks. A full read of a hash lock is eight
// commands (the hash, its lease, the fair queue twice, the fair timeouts,
// the fencing token, the hold-times record and the stats ring), yet a
// foreign Redisson lock nobody waits for has none of the side keys, and
// at ~1 µs of Redis CPU per command, mostly protocol, 10,000 of them read
// every 25th tick cost Redis about 2 % of a core. So an idle lock whose
// last full read found no side key is read as its hash, its lease and one
// EXISTS over every side key. If EXISTS counts any, the cadence makes the
// lock busy and the next tick reads it fully: a waiter joining, a token
// appearing or a store client starting to use the name shows one tick
// later than a full read would have shown it. Until then there is no side
// state to repeat: the last full read found none.

// lightSideKeys are the keys a full read of the hash lock at name reads
// besides the hash itself (queueRLockSides and the stats ring), for one
// EXISTS. ok is false when one of them hashes to another slot than name
// (names with braces Redisson's naming does not keep together): EXISTS
// over them would be a cross-slot command on a Cluster, so the lock keeps
// the full read.
func lightSideKeys(name string) (keys []string, ok bool) {
	keys = []string{
		store.FairLockQueueKey(name),
		store.FairLockTimeoutKey(name),
		store.FencingTokenKey(name),
		store.HeldKey(name),
		store.StatsKey(name),
	}
	slot := store.Slot(name)
	for _, k := range keys {
		if store.Slot(k) != slot {
			return nil, false
		}
	}
	return keys, true
}

// queueLightRead queues the light read of the hash lock at name, or
// returns false when its side keys cannot share one EXISTS.
func queueLightRead(ctx context.Context, pipe redis.Pipeliner, name string) (lockRead, bool) {
	keys, ok := lightSideKeys(name)
	if !ok {
		return lockRead{}, false
	}
	return lockRead{fields: pipe.HGetAll(ctx, name), pttl: pipe.PTTL(ctx, name),
		exists: pipe.Exists(ctx, keys...)}, true
}

// sidesFound reports whether a read found any side key: its own (found)
// and, for a full read, the stats ring too. A light read's EXISTS that
// failed counts as found, so the object gets the full read.
func (r lockRead) sidesFound(ring *redis.MapStringStringCmd) bool {
	if r.exists != nil {
		n, err := r.exists.Result()
		return err != nil || n > 0
	}
	return r.sides.found() || present(ring)
}

// found reports whether any side read of a hash lock saw its key: a reply
// other than "no such key" (an empty one, or redis.Nil) counts, errors
// included, so a key of an unexpected type keeps the full read.
func (s *lockSides) found() bool {
	if s == nil {
		return false
	}
	if s.qlen != nil {
		if n, err := s.qlen.Result(); err != nil || n > 0 {
			return true
		}
	}
	if s.timeouts != nil {
		if z, err := s.timeouts.Result(); err != nil || len(z) > 0 {
			return true
		}
	}
	if s.token != nil && !errors.Is(s.token.Err(), redis.Nil) {
		return true
	}
	return present(s.held)
}

// present reports whether a hash read found its key (or failed).
func present(cmd *redis.MapStringStringCmd) bool {
	if cmd == nil {
		return false
	}
	v, err := cmd.Result()
	return err != nil || len(v) > 0
}
