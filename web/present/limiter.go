package present

import "github.com/lockwarden/lockwarden/store/inspect"

// Window is a 1 s window. Rejected is null for limiters whose
// rejections Redis does not record: a 0 there would be made up.
type Window struct {
	Acquired int64  `json:"acquired"`
	Rejected *int64 `json:"rejected"`
	Errors   int64  `json:"errors"`
}

// Limiter is a limiter as the API says it (GET /api/limiters, one
// limiter, an edit's answer): kind-specific fields appear only on the
// kinds that have them.
type Limiter struct {
	Name       string       `json:"name"`
	Kind       inspect.Kind `json:"kind"`
	Rate       int64        `json:"rate"`
	IntervalMS float64      `json:"interval_ms"`
	PerSecond  float64      `json:"per_second"`
	Available  int64        `json:"available"`
	Window     Window       `json:"window"`
	// AvailableUnknown: Redis keeps no single number (one per client).
	AvailableUnknown bool `json:"available_unknown"`
	// RejectionsHidden: the window's rejected is unknown (null); Grants is
	// what Redis reveals instead.
	RejectionsHidden bool  `json:"rejections_hidden"`
	Grants           int64 `json:"grants"`
	GrantsKnown      bool  `json:"grants_known"`

	// Redisson rate limiter only.
	Algorithm    *string                `json:"algorithm,omitempty"`
	PerClient    *bool                  `json:"per_client,omitempty"`
	ResetInMS    *int64                 `json:"reset_in_ms,omitempty"`
	NextFreeInMS *int64                 `json:"next_free_in_ms,omitempty"`
	KeepAliveMS  *int64                 `json:"keep_alive_ms,omitempty"`
	Clients      []inspect.ClientWindow `json:"clients,omitempty"`

	// Access counter only. Limit is absent when no rule registers one.
	Count      *int64 `json:"count,omitempty"`
	Limit      *int64 `json:"limit,omitempty"`
	LimitKnown *bool  `json:"limit_known,omitempty"`
	TTLMS      *int64 `json:"ttl_ms,omitempty"`

	// Another library's limiter (a framework convention): what made the
	// console take it for this kind, and what its value says.
	Recognised string            `json:"recognised,omitempty"`
	Facts      map[string]string `json:"facts,omitempty"`

	// Stale: the limiter is shown as last read, its node not answering.
	Stale *Stale `json:"stale,omitempty"`
}

// LimiterOf is l with its last 1 s window w.
func LimiterOf(l inspect.LimiterInfo, w inspect.Counts) Limiter {
	out := Limiter{Name: l.Name, Kind: l.Kind, Rate: l.Rate, IntervalMS: l.IntervalMS,
		PerSecond: l.PerSecond, Available: l.Available,
		Window:           Window{Acquired: w.Acquired, Errors: w.Errors},
		AvailableUnknown: l.AvailableUnknown, RejectionsHidden: l.RejectionsHidden,
		Grants: l.Grants, GrantsKnown: l.GrantsKnown, Stale: StaleOf(l.Stale),
		Recognised: l.Recognised, Facts: l.Facts}
	if !l.RejectionsHidden {
		out.Window.Rejected = &w.Rejected
	}
	switch {
	case inspect.IsConvention(l.Kind) && l.TTL != 0:
		count, ttl := l.Count, LeaseMS(l.TTL)
		out.Count, out.TTLMS = &count, &ttl
		if l.LimitKnown {
			limit, known := l.Limit, true
			out.Limit, out.LimitKnown = &limit, &known
		}
	case l.Kind == inspect.KindRedissonLimiter:
		alg, perClient := l.Algorithm, l.PerClient
		reset, next, keep := l.ResetIn.Milliseconds(), l.NextFreeIn.Milliseconds(), l.KeepAliveMS
		out.Algorithm, out.PerClient = &alg, &perClient
		out.ResetInMS, out.NextFreeInMS, out.KeepAliveMS = &reset, &next, &keep
	case l.Kind == inspect.KindCounter:
		count, known, ttl := l.Count, l.LimitKnown, LeaseMS(l.TTL)
		out.Count, out.LimitKnown, out.TTLMS = &count, &known, &ttl
		if known {
			limit := l.Limit
			out.Limit = &limit
		}
	}
	return out
}
