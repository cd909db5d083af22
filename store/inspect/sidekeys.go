package inspect

import (
	"errors"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Light reads of idle hash locks. A full read of a hash lock is eight
// commands over six keys (the hash and its lease, the fair queue twice,
// the fair timeouts, the fencing token, the hold-times record and the
// stats ring), yet a foreign Redisson lock nobody waits for has none of
// the side keys. On a keyspace of a million keys each key looked up costs
// Redis ~1.2 µs, hit or miss (the main dictionary is far out of cache),
// against ~0.25 µs of protocol per command: 10,000 such locks read every
// 25th tick cost about 2 % of a core, almost all of it in lookups of keys
// that are not there. So an idle lock whose last read found no side key is
// read as its hash, its lease and one EXISTS over the side keys that can
// appear beside an unchanged hash:
//
//   - the fair queue and store's hand-off queue (waiters.go): a waiter
//     joins a held lock without touching its hash;
//   - the stats ring: a store client that fails to take a foreign lock
//     counts the attempt there;
//   - in turn, the fencing token or the hold-times record: both are written
//     when the lock is taken, which changes the hash unless the very holder
//     that had it let go and took it again between two reads; checked every
//     other light read, they show within two idle turns.
//
// The fair timeouts are never looked up on their own: a full read uses them
// only beside a queue. If EXISTS counts any key, the cadence makes the lock
// busy and the next tick reads it in full: what appeared shows one tick
// later than a full read would have shown it. Until then there is no side
// state to repeat: the last full read found none.

// lightTurn says which occasional side key a light read checks; zero is a
// full read.
type lightTurn uint8

const (
	lightToken lightTurn = iota + 1 // the fencing token
	lightHeld                       // the hold-times record
)

// lightSideKeys are the keys of one light read of the hash lock at name,
// for one EXISTS. ok is false when one of them hashes to another slot than
// name (names with braces Redisson's naming does not keep together): EXISTS
// over them would be a cross-slot command on a Cluster, so the lock keeps
// the full read.
func lightSideKeys(name string, turn lightTurn) (keys []string, ok bool) {
	keys = []string{wire.FairLockQueueKey(name), wire.LockQueueKey(name), wire.PollWaitersKey(name), wire.StatsKey(name)}
	if turn == lightToken {
		keys = append(keys, wire.FencingTokenKey(name))
	} else {
		keys = append(keys, wire.HeldKey(name))
	}
	slot := wire.Slot(name)
	for _, k := range keys {
		if wire.Slot(k) != slot {
			return nil, false
		}
	}
	return keys, true
}

// found reports whether any side read of a hash lock that a light read
// checks saw its key: a reply other than "no such key" (an empty one, or
// redis.Nil) counts, errors included, so a key of an unexpected type keeps
// the full read. Fair timeouts without a queue show nothing, nor do store's
// waiter entries without one: left out.
func (s *lockSides) found() bool {
	if s == nil {
		return false
	}
	if s.qlen != nil {
		if n, err := s.qlen.Result(); err != nil || n > 0 {
			return true
		}
	}
	if s.token != nil && !errors.Is(s.token.Err(), redis.Nil) {
		return true
	}
	if s.store.found() || present(s.poll) {
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
