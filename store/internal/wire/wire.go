// Package wire holds the Redis layout facts that both halves of store need:
// the application library (package store) writes objects in these layouts
// and the console (package store/inspect) reads and edits them. It is
// internal so that neither half's exported API has to carry them.
package wire

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
)

// Redisson's read-write lock hash: a "mode" field and one field per holder,
// the writer's ending in WriteSuffix.
const (
	RWModeField   = "mode"
	RWModeRead    = "read"
	RWModeWrite   = "write"
	RWWriteSuffix = ":write"
)

// UnlockMessage is what Redisson's LockPubSub reads as "unlocked" on a
// lock's unlock channel.
const UnlockMessage = "0"

// MaxRWLevelKeys bounds the read-level lease keys one script call passes;
// Redisson itself would need that many nested read locks by one thread to
// exceed it.
const MaxRWLevelKeys = 10000

// MaxStringValue bounds a token lock's token, and so the string values the
// console reads to classify: tokens and counters are short, and a large
// value is application data.
const MaxStringValue = 512

// Algorithm values of a Redisson rate limiter.
const (
	// AlgorithmFixedWindow is Redisson before 3.13.3: the value key is created
	// with the rate and PX interval, so the whole window refills at once.
	AlgorithmFixedWindow = "fixed-window"
	// AlgorithmSlidingWindow is Redisson 3.13.3 and later: the value key has
	// no window expiry and {<name>}:permits records every grant; grants
	// older than the interval are returned to the value one by one.
	AlgorithmSlidingWindow = "sliding-window"
)

// Stats layout, shared by every script that records outcomes:
//
//	StatsKey(name) is a hash with one counter per outcome and bucket. The
//	bucket of time t is floor(t_ms / BucketMS) (t from Redis TIME); the
//	field is the outcome letter followed by the bucket number in decimal:
//	"a<bucket>" acquired, "r<bucket>" rejected, "e<bucket>" errors, e.g.
//	"a8500000000". A writer does HINCRBY on its field, and only when that
//	returns 1 (the first outcome of its kind in the bucket) it also
//	PEXPIREs the hash StatsTTLMS and, if the hash holds more than
//	StatsMaxFields fields, deletes every field that is not one of the
//	StatsRing newest buckets. So an attempt costs one command, an idle
//	object leaves nothing, and a hash never holds more than
//	StatsMaxFields+1 fields (3 x StatsRing after a clean-up).
//
//	Locks add their waits to the same buckets. A grant that had to wait
//	(the hand-off to a queued waiter, an attempt after a failed one) adds,
//	besides 1 to its "a<bucket>": the wait in ms to "t<bucket>" (the
//	total), 1 to "<class><bucket>", where class is the letter of the
//	wait's histogram class (WaitClassLetters, bounds WaitClassBoundsMS),
//	and raises "m<bucket>" to the wait if it is larger (the max). It reads
//	the four fields with one HMGET and writes them with one HSET; when
//	"a<bucket>" was absent it counts the "a" by HINCRBY instead, so the
//	bucket's first grant restarts the expiry as above. The contended acquisitions of a bucket are the
//	sum of its classes. A hand-off's wait is the waiter's queue arrival
//	(its ZSET score) to the grant, in Redis time; a poller's is what its
//	client measured since its first attempt, passed as an argument. The
//	clean-up keeps any one-letter field of the StatsRing newest buckets.
//	A bucket with waits holds up to 15 fields (usually 5 to 7), so the
//	hash of a contended lock stays above StatsMaxFields and its clean-up
//	(HLEN, HKEYS, HDEL) runs on each new bucket's first count, once per
//	200 ms, keeping StatsRing buckets; objects without waits keep the
//	bound above.
//
// The expiry is only refreshed by the first count of a field: any later
// count of that field falls in the same 200 ms bucket, well inside the 5 s
// the first one set. The scripts write these numbers as literals.
const (
	BucketMS       = 200
	WindowMS       = 1000
	StatsRing      = 16
	StatsMaxFields = 64
	StatsTTLMS     = 5000
)

// Wait histogram of the stats layout: a wait of w ms is in the first class
// whose bound is >= w, or in the last class (over 10 s). The scripts write
// these bounds as literals.
var WaitClassBoundsMS = [...]int64{1, 3, 10, 30, 100, 300, 1000, 3000, 10000}

// WaitClassLetters name the classes in field names, "A<bucket>" for waits up
// to 1 ms through "J<bucket>" for waits over 10 s.
const WaitClassLetters = "ABCDEFGHIJ"

// The hold record of a lock in Redisson's RLock hash (reentrant, fair,
// fenced and spin locks) is a field of that hash: HoldField(holder) ->
// "<acquired ms> <renewed ms>" (Redis time; an acquisition of 0 was not
// recorded), followed by " <token>" when a hand-off to that waiter token
// granted the hold (the mark its waiter's next attempt finds). QueuedField
// -> "1" says store waiters may be queued (wire.LockQueueKey): set by a
// waiter's first queueing attempt and by a hand-off that leaves waiters
// behind, so a release that finds it absent skips the queue. Redisson's
// scripts read only their own holder field (HEXISTS, HGET, HINCRBY), and
// both fields go with the lock's DEL and expiry. One holder field at a
// time, so a lockwarden-held hash is {holder, HoldField(holder)} and, while
// waiters queue, QueuedField.
const (
	HoldFieldPrefix = "lw:held:"
	QueuedField     = "lw:queued"
)

// HoldField is the field of a lock's hash holding holder's hold record.
func HoldField(holder string) string { return HoldFieldPrefix + holder }

// ParseHoldRecord reads a hold record (HoldField's value, or a HeldKey
// entry): "<acquired ms> <renewed ms>", maybe followed by a hand-off mark.
// ok is false for anything else, a missing record ("") included.
func ParseHoldRecord(v string) (acquiredMS, renewedMS int64, ok bool) {
	acq, rest, ok := strings.Cut(v, " ")
	if !ok {
		return 0, 0, false
	}
	ren, _, _ := strings.Cut(rest, " ")
	a, errA := strconv.ParseInt(acq, 10, 64)
	r, errR := strconv.ParseInt(ren, 10, 64)
	if errA != nil || errR != nil || a < 0 || r <= 0 {
		return 0, 0, false
	}
	return a, r, true
}

// IsLockwardenField reports whether field of a lock hash is one of
// lockwarden's own (HoldField, QueuedField), which readers of the
// holders skip.
func IsLockwardenField(field string) bool {
	return field == QueuedField || strings.HasPrefix(field, HoldFieldPrefix)
}

// IsHolderField reports whether field is "<uuid>:<owner>" with a canonical
// 36-character UUID (IsUUID) and a non-empty owner: the shape of a lock
// holder field, which is how a lock hash is told from an application's own
// hash.
func IsHolderField(field string) bool {
	return len(field) >= uuidLen+2 && field[uuidLen] == ':' && IsUUID(field[:uuidLen])
}

const uuidLen = 36

// IsUUID reports whether s is a canonical UUID: 8-4-4-4-12 hex digits,
// either case.
func IsUUID(s string) bool {
	if len(s) != uuidLen {
		return false
	}
	for i := 0; i < uuidLen; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHexDigit(c) {
				return false
			}
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// ErrNotFound is the console's "no lock or limiter of a known kind at that
// name" (inspect.ErrNotFound), kept here so that store.ErrNotFound, its
// deprecated name, is the same value.
var ErrNotFound = errors.New("store: not found")

// MaxNameLen bounds the object names store and the console accept from
// callers (Redis allows 512 MB; neither needs that).
const MaxNameLen = 1024

// CheckName refuses an empty name and one longer than MaxNameLen, so
// applications and the console refuse the same names with the same words.
// It returns the field ("name") and why, or "" when the name is fine.
func CheckName(name string) (field, msg string) {
	switch {
	case name == "":
		return "name", "must not be empty"
	case len(name) > MaxNameLen:
		return "name", fmt.Sprintf("must be at most %d bytes, got %d", MaxNameLen, len(name))
	}
	return "", ""
}

// CheckRedissonRate checks a Redisson rate and interval as Redisson stores
// them: whole numbers, rate at least 1, interval at least 1 ms. It returns
// the offending field and why, or "" when both are fine; each caller wraps
// that in its own validation error.
func CheckRedissonRate(rate int64, intervalMS float64) (field, msg string) {
	if rate < 1 || rate > math.MaxUint32 {
		return "rate", fmt.Sprintf("must be between 1 and %d, got %d", int64(math.MaxUint32), rate)
	}
	if math.IsNaN(intervalMS) || intervalMS < 1 || intervalMS > float64(365*24*time.Hour/time.Millisecond) || intervalMS != math.Trunc(intervalMS) {
		return "interval_ms", fmt.Sprintf("must be a whole number of milliseconds between 1 and a year, got %g", intervalMS)
	}
	return "", ""
}

var redissonSetRateScript = NewScript(luascripts.Source("redisson_limiter_set_rate"))

// SetRedissonRate runs redisson_limiter_set_rate over keys (config hash,
// then value and permits pairs) and returns the script's code: 1 done, 0 no
// limiter to change (create false), anything else a key of another kind.
// The call is sent once (Script.Run); a network error leaves its outcome
// unknown. algorithm is AlgorithmFixedWindow, AlgorithmSlidingWindow or "" (keep).
func SetRedissonRate(ctx context.Context, rdb Processor, keys []string, rate, intervalMS int64,
	typ, keepAlive string, keep bool, algorithm string, create bool) (int64, error) {
	code, _, err := SetRedissonRateBatch(ctx, rdb, keys, rate, intervalMS, typ, keepAlive, keep, algorithm, create, 0)
	return code, err
}

// SetRedissonRateBatch is SetRedissonRate for one batch of a per-client
// limiter's pairs: oldRate > 0 is the rate before the edit (what "keep"
// counts against, which a config changed by the first batch no longer
// holds). It returns the script's code and the old rate it used.
func SetRedissonRateBatch(ctx context.Context, rdb Processor, keys []string, rate, intervalMS int64,
	typ, keepAlive string, keep bool, algorithm string, create bool, oldRate int64) (int64, int64, error) {
	mode, alg, creates := "reset", "", "existing"
	if keep {
		mode = "keep"
	}
	switch algorithm {
	case AlgorithmFixedWindow:
		alg = "fixed"
	case AlgorithmSlidingWindow:
		alg = "sliding"
	}
	if create {
		creates = "create"
	}
	old := ""
	if oldRate > 0 {
		old = strconv.FormatInt(oldRate, 10)
	}
	res, err := redissonSetRateScript.Run(ctx, rdb, keys, rate, intervalMS, typ, keepAlive, mode, alg, creates, old).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(res) < 3 {
		return res[0], 0, nil
	}
	return res[0], res[2], nil
}

// ClientGoneBeats is how many beat periods without a heartbeat make a
// client gone.
const ClientGoneBeats = 3

// ClientRecord is one client's registry value (JSON).
type ClientRecord struct {
	App         string `json:"app"`
	Host        string `json:"host"`
	PID         int    `json:"pid"`
	Version     string `json:"version"`
	StartedMS   int64  `json:"started_ms"`
	HeartbeatMS int64  `json:"heartbeat_ms"`
	BeatMS      int64  `json:"beat_ms"`
	// ReplicaAcks is the client's store.Options.ReplicaAcks (-1: off; 0:
	// every replica its master has); nil for clients that do not record it.
	ReplicaAcks *int `json:"replica_acks,omitempty"`
}
