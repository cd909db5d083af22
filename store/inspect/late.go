package inspect

import (
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
)

// Lease safety: what the lock scripts record of a release or renewal that
// came after its hold had ended (wire.LateFieldPrefix has the layout), as
// the console reads it from a lock's stats ring (Summary.Late) and hears it
// on the lock's late channel (an EventLate), and the evictions keyspace
// notifications report (EventEvicted).

const (
	// EventLate is a late release or renewal heard on a lock's late
	// channel (Event.Late says whose and when).
	EventLate EventType = "late"
	// EventEvicted is a lock key Redis evicted (maxmemory), reported by
	// a keyspace notification.
	EventEvicted EventType = "evicted"
)

// Ops of a LateRelease.
const (
	LateReleaseOp = "release"
	LateRenewOp   = "renew"
)

// LateRelease is a release (Op "release") or renewal ("renew") by Holder
// that arrived after its hold of Lock had ended, refused by the script that
// recorded it.
type LateRelease struct {
	Lock   string    `json:"lock"`
	Holder string    `json:"holder"`
	Op     string    `json:"op"`
	At     time.Time `json:"at"` // Redis time of the refusal
	// Next is the holder the lock had at the refusal ("" when free);
	// NextSince its recorded acquisition (zero when unknown).
	Next      string    `json:"next_holder,omitempty"`
	NextSince time.Time `json:"next_since,omitzero"`
}

func lateOf(lock string, l wire.Late) LateRelease {
	out := LateRelease{Lock: lock, Holder: l.Holder, Op: l.Op, At: time.UnixMilli(l.AtMS), Next: l.Next}
	if l.NextSinceMS > 0 {
		out.NextSince = time.UnixMilli(l.NextSinceMS)
	}
	return out
}

// lateFields reads the late records among a stats hash's fields.
func lateFields(lock string, fields map[string]string) []LateRelease {
	var out []LateRelease
	for k, v := range fields {
		holder, ok := strings.CutPrefix(k, wire.LateFieldPrefix)
		if !ok || holder == "" {
			continue
		}
		if l, ok := wire.ParseLateRecord(holder, v); ok {
			out = append(out, lateOf(lock, l))
		}
	}
	return out
}

// lateEvent reads a message of a lock's late channel.
func lateEvent(lock, payload string) (*LateRelease, bool) {
	l, ok := wire.ParseLateMessage(payload)
	if !ok {
		return nil, false
	}
	lr := lateOf(lock, l)
	return &lr, true
}

// lateFamily is the late channels' subscription: one pattern for every
// lock's (wire.LateChannelPattern), the lock name after "}:late:".
var lateFamily = channelFamily{
	pattern: wire.LateChannelPattern,
	prefix:  wire.Prefix,
	typ:     EventLate,
	name: func(rest string) (string, string) {
		name, _ := wire.LateOwner(wire.Prefix + rest)
		return name, ""
	},
}
