package feed

import (
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// What the frames say of an object beside its numbers; the API says the
// same (Stale, LeaseMS, HoldersOf), so web presents it with these.

// Stale marks, in the API and the frames, an object shown as last read:
// its node and the Redis time of that read.
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

func (f *statsFrame) markStale(name string, st *inspect.StaleRead) {
	if j := StaleOf(st); j != nil {
		j.Reason = ""
		f.Stale[name] = *j
	}
}

// limiterInfo is what a stats frame carries per limiter besides its
// counts: enough for the script to add a row for a limiter discovered after
// the page loaded, and to keep "rejections not visible" honest live.
type limiterInfo struct {
	Kind             inspect.Kind `json:"kind"`
	Rate             int64        `json:"rate"`
	IntervalMS       float64      `json:"interval_ms"`
	PerSecond        float64      `json:"per_second"`
	AvailableUnknown bool         `json:"available_unknown,omitempty"`
	RejectionsHidden bool         `json:"rejections_hidden,omitempty"`
	Grants           *int64       `json:"grants,omitempty"`
	// Limit is a counter's registered limit, LimitKnown whether there is one.
	Limit      int64 `json:"limit,omitempty"`
	LimitKnown bool  `json:"limit_known,omitempty"`
}

func toLimiterInfo(l inspect.LimiterInfo) limiterInfo {
	out := limiterInfo{Kind: l.Kind, Rate: l.Rate, IntervalMS: l.IntervalMS, PerSecond: l.PerSecond,
		AvailableUnknown: l.AvailableUnknown, RejectionsHidden: l.RejectionsHidden,
		Limit: l.Limit, LimitKnown: l.LimitKnown}
	if l.GrantsKnown {
		g := l.Grants
		out.Grants = &g
	}
	return out
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
