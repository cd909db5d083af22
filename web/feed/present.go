package feed

import (
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/present"
)

// What the frames say of an object beside its numbers, in the words the
// API uses too (web/present).

func (f *statsFrame) markStale(name string, st *inspect.StaleRead) {
	if j := present.StaleOf(st); j != nil {
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
