// Package present is how the console's objects read in its JSON, wherever
// they are sent: the REST API (web) and the websocket frames (web/feed)
// say the same of a lease, a lock's holders and an object shown as last
// read, so both use these. It imports store/inspect only.
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
