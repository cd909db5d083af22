// Package present is how the console's objects read in its JSON, wherever
// they are sent: the REST API (web) and the websocket frames (web/feed)
// say the same of a lease, a lock's holders, its longest current wait and
// an object shown as last read, so both use these; a lock and a limiter as
// the API says them are here too (lock.go, limiter.go). It imports
// store/inspect only.
package present

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// Stale marks an object shown as last read: its node and the Redis time
// of that read.
type Stale struct {
	Node       string `json:"node"`
	LastReadMS int64  `json:"last_read_ms"`
	Reason     string `json:"reason,omitempty"`
	// ClusterDown: the node answers but the Cluster refuses every key.
	ClusterDown bool `json:"cluster_down,omitempty"`
}

// StaleOf is st as the API and the frames carry it; nil when fresh.
func StaleOf(st *inspect.StaleRead) *Stale {
	if st == nil {
		return nil
	}
	return &Stale{Node: st.Node, LastReadMS: st.LastRead.UnixMilli(), Reason: st.Reason, ClusterDown: st.ClusterDown}
}

// LeaseMS is a lease in ms, -1 for a key without expiry.
func LeaseMS(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// HoldersOf is h, empty rather than null in JSON.
func HoldersOf(h []inspect.Holder) []inspect.Holder {
	if h == nil {
		return []inspect.Holder{}
	}
	return h
}

// WaitingSince is when the longest current waiter of l queued (epoch ms,
// Redis time): the earliest arrival among the waiters whose place has not
// timed out. 0 when none waits, or none says when it queued (a Redisson
// fair lock's queue keeps no arrival). Lists, pages, frames and "why" rank
// and describe a stuck lock by it: finished waits say nothing of a waiter
// that never got the lock.
func WaitingSince(l *inspect.LockInfo) int64 {
	var since int64
	for i := range l.Waiters {
		w := &l.Waiters[i]
		if w.ArrivedMS > 0 && w.RemainingMS > 0 && (since == 0 || w.ArrivedMS < since) {
			since = w.ArrivedMS
		}
	}
	return since
}

// LongestWaitMS is how long the longest current waiter of l has waited at
// nowMS (epoch ms); 0 when none is known to wait (WaitingSince).
func LongestWaitMS(l *inspect.LockInfo, nowMS int64) int64 {
	since := WaitingSince(l)
	if since == 0 {
		return 0
	}
	return max(0, nowMS-since)
}
