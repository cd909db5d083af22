package wire

import (
	"strconv"
	"strings"
	"sync"
)

// Key and channel names. Every key a script touches must hash to the slot
// of the object it belongs to, so that scripts run unchanged on Redis
// Cluster. Names from Redis are arbitrary bytes (braces, colons, spaces,
// unicode), so a name cannot simply be wrapped in braces: "a{}b" or "x}y"
// would then hash elsewhere. HashTagFor finds a tag that is guaranteed to
// land in the name's slot.

// Prefix starts every key and channel of lockwarden's own bookkeeping
// ("lw:{<tag>}:..."); IsInternalKey keeps them out of listings.
const Prefix = "lw:{"

// The client registry: every key carries the {lw-clients} tag so the beat
// script (client_beat.lua) touches one slot.
const (
	// ClientsKey is the registry hash: client id -> JSON ClientRecord.
	ClientsKey = Prefix + "lw-clients}:clients"
	// ClientNamesKey is the zset of announced object names (score: Redis
	// TIME ms of the last announcement; members per AnnouncedMember).
	ClientNamesKey = Prefix + "lw-clients}:names"
)

// AuditKey is the console's default audit stream.
const AuditKey = Prefix + "audit}:stream"

const numSlots = 16384

// Slot returns the Redis Cluster hash slot of key, following the cluster
// spec: if the key holds a non-empty {tag}, only the tag is hashed.
func Slot(key string) uint16 {
	return crc16(hashed(key)) % numSlots
}

// hashed returns the part of key that Redis Cluster hashes.
func hashed(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	close := strings.IndexByte(key[open+1:], '}')
	if close <= 0 { // no closing brace, or an empty {} tag
		return key
	}
	return key[open+1 : open+1+close]
}

// HashTagFor returns a string t such that "{t}" hashes to the same slot as
// name and t holds no closing brace. For most names t is simply the hashed
// part of the name, which keeps derived keys readable.
func HashTagFor(name string) string {
	h := hashed(name)
	if h != "" && !strings.ContainsRune(h, '}') {
		return h
	}
	return slotTag(Slot(name))
}

var (
	slotTagsOnce sync.Once
	slotTags     []string
)

// slotTag returns a short decimal string that hashes to slot. The table is
// built once on first use (about 100k CRC16s of short strings, ~2 ms).
func slotTag(slot uint16) string {
	slotTagsOnce.Do(func() {
		slotTags = make([]string, numSlots)
		found := 0
		for i := 0; found < numSlots; i++ {
			s := "s" + strconv.Itoa(i)
			sl := crc16(s) % numSlots
			if slotTags[sl] == "" {
				slotTags[sl] = s
				found++
			}
		}
	})
	return slotTags[slot]
}

// SlotKey returns a short key that hashes to slot, for sending a command to
// the node that owns slot through a Cluster client's routing.
func SlotKey(slot uint16) string { return "{" + slotTag(slot%numSlots) + "}" }

// internalKey names lockwarden's own key (or channel) of one kind for the
// object at name, in the object's hash slot: "lw:{<tag>}:<kind>:<name>".
func internalKey(kind, name string) string {
	return Prefix + HashTagFor(name) + "}:" + kind + ":" + name
}

// IsInternalKey reports whether key belongs to lockwarden's own bookkeeping
// (stats rings, hand-off queues, hold records, the registry, the audit
// stream) and must never be listed as a user object.
func IsInternalKey(key string) bool { return strings.HasPrefix(key, Prefix) }

// StatsKey is the hash holding the 200 ms outcome counters of the lock or
// limiter stored at name (fields "<outcome><bucket>", BucketMS buckets,
// StatsRing of them kept).
func StatsKey(name string) string { return internalKey("stats", name) }

// StatsOwner is the object name of a StatsKey; ok is false for any other key.
func StatsOwner(key string) (name string, ok bool) {
	_, name, ok = strings.Cut(key, "}:stats:")
	return name, ok && IsInternalKey(key)
}

// HeldKey is the hash beside a read-write, token or deadline lock where
// lockwarden's scripts record each holder's hold times, "<acquired ms>
// <renewed ms>" (Redis time; an acquisition of 0 means it was not
// recorded), expiring with the lock. Locks in Redisson's RLock hash keep
// theirs in the hash itself (HoldField). Redisson holders have no entry.
func HeldKey(name string) string { return internalKey("held", name) }

// LockQueueKey, LockEntriesKey and LockWakeChannel are a reentrant lock's
// waiter queue (zset of waiter tokens by arrival), waiter entries (hash
// token -> "<deadline ms> <lease ms> <holder>") and hand-off channel, in
// the lock's hash slot. A hand-off publishes "<token> <next>" on the
// channel: the token handed the lock, then the token first in the queue
// behind it ("" when none); the acquire script's hand-off publishes the
// token alone.
func LockQueueKey(name string) string    { return internalKey("queue", name) }
func LockEntriesKey(name string) string  { return internalKey("waiters", name) }
func LockWakeChannel(name string) string { return internalKey("handoff", name) }

// PollWaitersKey is the hash where the kinds that wait without a queue
// (spin, token and read-write locks of store) show who waits: field waiter
// id (random per waiting Lock call) -> "<since ms> <deadline ms> <holder>",
// where since is when the wait began (Redis time of the first failed
// attempt), deadline when the entry is stale unless a new attempt
// refreshes it, and holder the field (a token lock's token) the waiter
// would hold the lock under. Each failed attempt writes its entry and sets
// the hash's PEXPIRE to the entry lifetime; the grant deletes it. A waiter
// that gave up leaves its entry until its deadline: readers skip entries
// whose deadline has passed. In the lock's hash slot.
func PollWaitersKey(name string) string { return internalKey("pollwait", name) }

// TokenLockChannel is where lockwarden's token-lock releases (and the
// console's force-unlocks) say the lock is free, so waiters need not poll.
// Other clients of the layout neither publish nor listen.
func TokenLockChannel(name string) string { return internalKey("tokenlock", name) }

// Prefixes of Redisson's release channels: "<prefix>:{<name>}" (and, for a
// fair lock's waiters, "redisson_lock__channel:{<name>}:<waiter id>").
const (
	UnlockChannelPrefix = "redisson_lock__channel"
	RWLockChannelPrefix = "redisson_rwlock"
)

// UnlockChannel is the channel Redisson's RLock publishes on when name is
// released. Redisson wraps the name in braces unless it already holds one.
func UnlockChannel(name string) string { return redissonPrefixName(UnlockChannelPrefix, name) }

// RWLockChannel is where a Redisson read-write lock announces releases.
func RWLockChannel(name string) string { return redissonPrefixName(RWLockChannelPrefix, name) }

// FairLockQueueKey and FairLockTimeoutKey are a Redisson fair lock's waiter
// queue and waiter deadlines.
func FairLockQueueKey(name string) string { return redissonPrefixName("redisson_lock_queue", name) }

// FairLockTimeoutKey: see FairLockQueueKey.
func FairLockTimeoutKey(name string) string {
	return redissonPrefixName("redisson_lock_timeout", name)
}

// FencingTokenKey is a Redisson fenced lock's token counter.
func FencingTokenKey(name string) string { return redissonPrefixName("redisson_lock_token", name) }

// RWReadLevelKey is the lease key of one read level of holder in a Redisson
// read-write lock.
func RWReadLevelKey(name, holder string, level int64) string {
	return redissonSuffixName(name, holder) + ":rwlock_timeout:" + strconv.FormatInt(level, 10)
}

// RedissonValueKey and RedissonPermitsKey are a Redisson rate limiter's
// state keys; clientID "" gives the overall ones.
func RedissonValueKey(name, clientID string) string {
	k := redissonSuffixName(name, "value")
	if clientID != "" {
		k += ":" + clientID
	}
	return k
}

// RedissonPermitsKey: see RedissonValueKey.
func RedissonPermitsKey(name, clientID string) string {
	k := redissonSuffixName(name, "permits")
	if clientID != "" {
		k += ":" + clientID
	}
	return k
}

// redissonPrefixName mirrors Redisson's naming of derived objects.
func redissonPrefixName(prefix, name string) string {
	if strings.ContainsRune(name, '{') {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// redissonSuffixName mirrors Redisson's naming of per-object state keys such
// as "{name}:value".
func redissonSuffixName(name, suffix string) string {
	if strings.ContainsRune(name, '{') {
		return name + ":" + suffix
	}
	return "{" + name + "}:" + suffix
}

// crc16 is CRC-16/XMODEM (poly 0x1021, init 0), the checksum Redis Cluster
// uses for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
