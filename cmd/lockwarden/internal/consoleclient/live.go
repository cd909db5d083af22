package consoleclient

import (
	"encoding/json"
	"fmt"
	"maps"
)

// The websocket's frames (web/feed): "stats" five times a second, whole
// on a connection's first frame and then as deltas; "status" when Redis
// comes or goes; "alerts" with the firing set; lock events. Live keeps
// what they add up to, as the browser client (static/live.js) does.

// Counts are an object's outcomes over the last second.
type Counts struct {
	Acquired int64 `json:"acquired"`
	Rejected int64 `json:"rejected"`
	Errors   int64 `json:"errors"`
}

// HolderWho is one holder of a lock in words, and since when (epoch ms).
type HolderWho struct {
	Who       string `json:"who"`
	HeldSince int64  `json:"held_since"`
	SinceSeen bool   `json:"since_seen"`
	RenewedAt int64  `json:"renewed_at"`
}

// LockWait is a lock's finished waits over the last 10 s.
type LockWait struct {
	Acquired  int64 `json:"acquired"`
	Contended int64 `json:"contended"`
	P50MS     int64 `json:"p50_ms"`
	P99MS     int64 `json:"p99_ms"`
	MaxMS     int64 `json:"max_ms"`
}

// LimiterInfo is a limiter's rule as frames carry it.
type LimiterInfo struct {
	Kind             string  `json:"kind"`
	Rate             int64   `json:"rate"`
	IntervalMS       float64 `json:"interval_ms"`
	PerSecond        float64 `json:"per_second"`
	AvailableUnknown bool    `json:"available_unknown"`
	RejectionsHidden bool    `json:"rejections_hidden"`
	Limit            int64   `json:"limit"`
	LimitKnown       bool    `json:"limit_known"`
}

// statsFrame is a "stats" frame; a map left out of the JSON stays nil. In
// a delta, the number maps hold only what changed; the meta maps (kinds
// to stale) come only when one of them changed, and mean "as last sent"
// when absent.
type statsFrame struct {
	Delta        bool                            `json:"delta"`
	At           int64                           `json:"at"`
	Limiters     map[string]Counts               `json:"limiters"`
	Locks        map[string]Counts               `json:"locks"`
	Available    map[string]int64                `json:"available"`
	PTTLMS       map[string]int64                `json:"pttl_ms"`
	Who          map[string]map[string]HolderWho `json:"who"`
	Waiters      map[string]int64                `json:"waiters"`
	Waits        map[string]LockWait             `json:"waits"`
	WaitingSince map[string]int64                `json:"waiting_since"`
	Deadlocked   []string                        `json:"deadlocked"`
	Deadlocks    int                             `json:"deadlocks"`
	LockCount    int                             `json:"lock_count"`
	LimiterCount int                             `json:"limiter_count"`
	Removed      []string                        `json:"removed"`

	Kinds       map[string]string      `json:"kinds"`
	FirstSeen   map[string]int64       `json:"first_seen"`
	LimiterInfo map[string]LimiterInfo `json:"limiter_info"`
	Holders     map[string][]Holder    `json:"holders"`
	Stale       map[string]Stale       `json:"stale"`
}

// Live is the console's state as its frames tell it. Not safe for
// concurrent use: one goroutine applies frames and reads it.
type Live struct {
	// At is the last stats frame's time (epoch ms, the console's clock).
	At int64
	// Primed: a whole stats frame arrived on this connection, so the maps
	// below are the console's and deltas apply.
	Primed bool
	// RedisDown: the console's last status frame said Redis is down.
	RedisDown bool
	// Limiters and Locks are each object's last second; their keys are the
	// objects the console sees.
	Limiters, Locks map[string]Counts
	Available       map[string]int64
	Who             map[string]map[string]HolderWho
	Waiters         map[string]int64
	Waits           map[string]LockWait
	// WaitingSince is when each lock's longest current waiter queued
	// (epoch ms); Deadlocked the locks in a wait-for cycle.
	WaitingSince map[string]int64
	Deadlocked   map[string]bool
	Deadlocks    int
	LockCount    int
	LimiterCount int
	Kinds        map[string]string
	FirstSeen    map[string]int64
	LimiterInfo  map[string]LimiterInfo
	Holders      map[string][]Holder
	Stale        map[string]Stale
	Alerts       []Alert

	pttl, pttlAt map[string]int64 // a lease as last sent, and the frame time it was sent at
}

// Reset forgets everything but the alerts and Redis's state, which a new
// connection is sent before its first stats frame anyway.
func (l *Live) Reset() {
	alerts, down := l.Alerts, l.RedisDown
	*l = Live{Alerts: alerts, RedisDown: down}
}

// Apply adds one frame and says its type ("stats", "status", "alerts",
// or an event's type). A delta before the first whole frame is skipped.
func (l *Live) Apply(data []byte) (string, error) {
	var head struct {
		Type   string  `json:"type"`
		Redis  string  `json:"redis"`
		Alerts []Alert `json:"alerts"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return "", fmt.Errorf("a websocket frame is not JSON: %w", err)
	}
	switch head.Type {
	case "status":
		l.RedisDown = head.Redis == "down"
	case "alerts":
		l.Alerts = head.Alerts
	case "stats":
		var f statsFrame
		if err := json.Unmarshal(data, &f); err != nil {
			return head.Type, fmt.Errorf("a stats frame is not what was expected: %w", err)
		}
		l.applyStats(&f)
	}
	return head.Type, nil
}

func (l *Live) applyStats(f *statsFrame) {
	if !f.Delta {
		l.Primed = true
		l.Limiters, l.Locks, l.Available = orEmpty(f.Limiters), orEmpty(f.Locks), orEmpty(f.Available)
		l.Who, l.Waiters, l.Waits = orEmpty(f.Who), orEmpty(f.Waiters), orEmpty(f.Waits)
		l.WaitingSince = orEmpty(f.WaitingSince)
		l.pttl, l.pttlAt = orEmpty(f.PTTLMS), make(map[string]int64, len(f.PTTLMS))
		for name := range l.pttl {
			l.pttlAt[name] = f.At
		}
	} else {
		if !l.Primed {
			return
		}
		for _, name := range f.Removed {
			for _, m := range []map[string]Counts{l.Limiters, l.Locks} {
				delete(m, name)
			}
			delete(l.Available, name)
			delete(l.Who, name)
			delete(l.Waiters, name)
			delete(l.WaitingSince, name)
			delete(l.Waits, name)
			delete(l.pttl, name)
			delete(l.pttlAt, name)
		}
		maps.Copy(l.Limiters, f.Limiters)
		maps.Copy(l.Locks, f.Locks)
		maps.Copy(l.Available, f.Available)
		maps.Copy(l.Who, f.Who)
		for _, m := range []struct{ to, from map[string]int64 }{{l.Waiters, f.Waiters}, {l.WaitingSince, f.WaitingSince}} {
			for name, n := range m.from {
				if n == 0 { // its last waiter left
					delete(m.to, name)
				} else {
					m.to[name] = n
				}
			}
		}
		for name, w := range f.Waits {
			if w.Contended <= 0 { // its contention left the window
				delete(l.Waits, name)
			} else {
				l.Waits[name] = w
			}
		}
		for name, v := range f.PTTLMS {
			l.pttl[name], l.pttlAt[name] = v, f.At
		}
	}
	l.At, l.Deadlocks, l.LockCount, l.LimiterCount = f.At, f.Deadlocks, f.LockCount, f.LimiterCount
	// Every frame names the locks of its cycles whole.
	l.Deadlocked = make(map[string]bool, len(f.Deadlocked))
	for _, n := range f.Deadlocked {
		l.Deadlocked[n] = true
	}
	keepIfSent(&l.Kinds, f.Kinds)
	keepIfSent(&l.FirstSeen, f.FirstSeen)
	keepIfSent(&l.LimiterInfo, f.LimiterInfo)
	keepIfSent(&l.Holders, f.Holders)
	keepIfSent(&l.Stale, f.Stale)
}

// LongestWaitMS is how long lock name's longest current waiter had
// waited at the last frame; -1 when nobody waits (or none says since when).
func (l *Live) LongestWaitMS(name string) int64 {
	since, ok := l.WaitingSince[name]
	if !ok || since <= 0 {
		return -1
	}
	return max(0, l.At-since)
}

// LeaseMS is a lock's lease left at the last frame: the console sends a
// lease only when it strays from the countdown, so it is counted down from
// when it was sent. -1: the lock has no expiry; 0 also when unknown.
func (l *Live) LeaseMS(name string) int64 {
	v, ok := l.pttl[name]
	if !ok || v < 0 {
		return v
	}
	return max(0, v-(l.At-l.pttlAt[name]))
}

func orEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// keepIfSent replaces *dst with a meta map the frame carried.
func keepIfSent[V any](dst *map[string]V, sent map[string]V) {
	if sent != nil {
		*dst = sent
	}
}
