package wire

import (
	"strconv"
	"strings"
)

// A late release or renewal is one that arrives for a hold that had
// already ended (its lease ran out, a force-unlock took it): the holder
// worked on past its lease, and someone else may have been in the
// critical section with it. The scripts that refuse it record it in the
// same call (luascripts/lib/late.lua), at no cost to a release that
// finds its hold:
//
//	LateField(holder) in the lock's stats hash (StatsKey) -> "<op> <at>
//	<since> <next>": op is "release" or "renew", at the Redis time of the
//	refusal (ms), next the holder the lock had then ("" when it was free)
//	and since next's recorded acquisition (ms, 0 when unknown). The field
//	lives with the stats hash (its expiry is restarted to StatsTTLMS), so
//	the console reads it with the lock's stats while it samples the lock.
//
//	LateChannel(name) gets "<len> <holder> <op> <at> <since> <next>" (len
//	the holder's length in bytes, as holders may hold spaces), so the
//	console hears of it at once even when the lock is free and no longer
//	sampled. Its name is the stats key's with "late" for "stats", so the
//	scripts build it from their keys.
const LateFieldPrefix = "late:"

// LateField is the stats hash field of holder's late release or renewal.
func LateField(holder string) string { return LateFieldPrefix + holder }

// LateChannel is where the scripts announce a late release or renewal of
// the lock at name.
func LateChannel(name string) string { return internalKey("late", name) }

// LateChannelPattern matches every LateChannel, for PSUBSCRIBE.
const LateChannelPattern = Prefix + "*}:late:*"

// LateOwner is the lock name of a LateChannel; ok is false for any other
// channel.
func LateOwner(channel string) (name string, ok bool) {
	if !IsInternalKey(channel) {
		return "", false
	}
	_, name, ok = strings.Cut(channel, "}:late:")
	return name, ok
}

// Late is one late release or renewal, as recorded.
type Late struct {
	Holder string
	Op     string // "release" or "renew"
	AtMS   int64  // Redis time of the refusal
	// Next is the holder the lock had at the refusal ("" when free) and
	// NextSinceMS its recorded acquisition (0 when unknown).
	Next        string
	NextSinceMS int64
}

// ParseLateRecord reads a LateField's value for holder.
func ParseLateRecord(holder, v string) (Late, bool) {
	op, rest, ok1 := strings.Cut(v, " ")
	at, rest, ok2 := strings.Cut(rest, " ")
	since, next, ok3 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !ok3 || (op != "release" && op != "renew") {
		return Late{}, false
	}
	a, err1 := strconv.ParseInt(at, 10, 64)
	s, err2 := strconv.ParseInt(since, 10, 64)
	if err1 != nil || err2 != nil || a <= 0 || s < 0 {
		return Late{}, false
	}
	return Late{Holder: holder, Op: op, AtMS: a, Next: next, NextSinceMS: s}, true
}

// ParseLateMessage reads a message of LateChannel.
func ParseLateMessage(payload string) (Late, bool) {
	n, rest, ok := strings.Cut(payload, " ")
	size, err := strconv.Atoi(n)
	if !ok || err != nil || size <= 0 || size >= len(rest) || rest[size] != ' ' {
		return Late{}, false
	}
	return ParseLateRecord(rest[:size], rest[size+1:])
}
