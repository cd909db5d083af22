package store

import (
	"strconv"
	"strings"
	"sync"
)

// Key layout. Every key a script touches must hash to the slot of the object
// it belongs to so that scripts run unchanged on Redis Cluster. Names from
// Redis are arbitrary bytes (braces, colons, spaces, unicode), so the layout
// cannot simply wrap the name in braces: "a{}b" or "x}y" would then hash
// elsewhere. hashTagFor finds a tag that is guaranteed to land in the same slot.

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

// hashTagFor returns a string t such that "{t}" hashes to the same slot as
// name and t holds no closing brace. For most names t is simply the hashed
// part of the name, which keeps derived keys readable.
func hashTagFor(name string) string {
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

// StatsKey is the hash holding the 200 ms outcome counters of the lock or limiter
// stored at name (layout in the comment above BucketMS).
func StatsKey(name string) string { return internalKey("stats", name) }

// internalPrefix starts every key and channel of lockwarden's own
// bookkeeping; IsInternalKey keeps them out of listings.
const internalPrefix = "lw:{"

// internalKey names lockwarden's own key (or channel) of one kind for the
// object at name, in the object's hash slot: "lw:{<tag>}:<kind>:<name>".
func internalKey(kind, name string) string {
	return internalPrefix + hashTagFor(name) + "}:" + kind + ":" + name
}

// TokenLockChannel is where lockwarden's token-lock releases (and the
// console's force-unlocks) say the lock is free, so waiters need not poll.
// Other clients of the layout neither publish nor listen.
func TokenLockChannel(name string) string { return internalKey("tokenlock", name) }

// UnlockChannel is the channel Redisson's RLock publishes on when name is
// released. Redisson wraps the name in braces unless it already holds one.
func UnlockChannel(name string) string {
	return redissonPrefixName("redisson_lock__channel", name)
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

// IsInternalKey reports whether key belongs to lockwarden's own bookkeeping
// (stats rings, audit stream) and must never be listed as a user object.
func IsInternalKey(key string) bool {
	return strings.HasPrefix(key, internalPrefix)
}

// FairLockQueueKey and FairLockTimeoutKey are a Redisson fair lock's waiter
// queue and waiter deadlines.
func FairLockQueueKey(name string) string { return redissonPrefixName("redisson_lock_queue", name) }

// FairLockTimeoutKey: see FairLockQueueKey.
func FairLockTimeoutKey(name string) string {
	return redissonPrefixName("redisson_lock_timeout", name)
}

// FencingTokenKey is a Redisson fenced lock's token counter.
func FencingTokenKey(name string) string { return redissonPrefixName("redisson_lock_token", name) }

// RWLockChannel is where a Redisson read-write lock announces releases.
func RWLockChannel(name string) string { return redissonPrefixName("redisson_rwlock", name) }

// RWReadLevelKey is the lease key of one read level of holder.
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
