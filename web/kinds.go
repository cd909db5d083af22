package web

import (
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/feed"
	"slices"
	"strings"
)

// How each lock and limiter kind reaches the API and the pages. The store
// says what a kind's state is; this file decides which of it a client sees,
// so kind-specific fields appear only on the kinds that have them (a
// fencing token of 0 on a reentrant lock would read as a real token).

type lockJSON struct {
	Name    string           `json:"name"`
	Kind    inspect.Kind     `json:"kind"`
	Holders []inspect.Holder `json:"holders"`
	PTTLMS  int64            `json:"pttl_ms"`
	// Channel is the Redisson-style channel a release is announced on; ""
	// for token locks, whose releases wake only lockwarden's own waiters
	// (TokenLockChannel in store/internal/wire) and are not in the event stream.
	Channel string `json:"channel"`
	// Mode is a read-write lock's "read" or "write".
	Mode string `json:"mode,omitempty"`
	// Waiters are the lock's queue (a fair lock's, store's hand-off
	// queue), always a list in GET of one lock, left out of list rows
	// without waiters; WaitersTotal counts them all. Subscribers counts a
	// held Redisson lock's waiters when they can only be counted (the
	// clients subscribed to its unlock channel), when counted.
	Waiters      []inspect.Waiter `json:"waiters,omitempty"`
	WaitersTotal int64            `json:"waiters_total"`
	Subscribers  *int64           `json:"subscribers,omitempty"`
	// FencingToken is a fenced lock's current token.
	FencingToken *int64 `json:"fencing_token,omitempty"`
	// DeadlineMS is a deadline lock's deadline (epoch ms).
	DeadlineMS *int64 `json:"deadline_ms,omitempty"`
	// Recognised says what made the console take another library's key
	// for this kind (a framework convention); absent for lockwarden's and
	// Redisson's own layouts.
	Recognised string `json:"recognised,omitempty"`
	// ForceUnlock is, per holder, what a force-unlock would do (GET of one
	// lock only).
	ForceUnlock map[string]inspect.ForceUnlockPlan `json:"force_unlock,omitempty"`
	// Stale: the lock is shown as last read, its node not answering.
	Stale *feed.Stale `json:"stale,omitempty"`
	// Acked: every holder's grant was confirmed by replicas (false when
	// one holder's client does not wait for them); absent when no holder's
	// client says. Per holder in holders[].client.acked.
	Acked *bool `json:"acked,omitempty"`
	lockWaitJSON
}

// holdersAcked is lockJSON.Acked.
func holdersAcked(hs []inspect.Holder) *bool {
	var out *bool
	for _, h := range hs {
		if h.Client == nil || h.Client.Acked == nil {
			continue
		}
		v := *h.Client.Acked && (out == nil || *out)
		out = &v
	}
	return out
}

func toLockJSON(l inspect.LockInfo) lockJSON {
	out := lockJSON{Name: l.Name, Kind: l.Kind, Holders: feed.HoldersOf(l.Holders), PTTLMS: feed.LeaseMS(l.PTTL),
		Channel: l.Channel, Mode: l.Mode, Stale: feed.StaleOf(l.Stale), Acked: holdersAcked(l.Holders),
		Recognised: l.Recognised}
	out.Waiters, out.WaitersTotal, out.Subscribers = l.Waiters, l.WaitersTotal, l.Subscribers
	if l.Kind == inspect.KindFairLock && out.Waiters == nil {
		out.Waiters = []inspect.Waiter{}
	}
	if l.Kind == inspect.KindFencedLock {
		out.FencingToken = &l.FencingToken
	}
	if l.Kind == inspect.KindDeadlineLock {
		ms := l.Deadline.UnixMilli()
		out.DeadlineMS = &ms
	}
	return out
}

// toLockDetailJSON adds the force-unlock plans to one lock.
func toLockDetailJSON(l inspect.LockInfo) lockJSON {
	out := toLockJSON(l)
	if out.Waiters == nil {
		out.Waiters = []inspect.Waiter{}
	}
	out.ForceUnlock = make(map[string]inspect.ForceUnlockPlan, len(l.Holders))
	for _, h := range l.Holders {
		out.ForceUnlock[h.ID] = l.ForceUnlockPlan(h.ID)
	}
	return out
}

// windowJSON is a 1 s window. Rejected is null for limiters whose
// rejections Redis does not record: a 0 there would be made up.
type windowJSON struct {
	Acquired int64  `json:"acquired"`
	Rejected *int64 `json:"rejected"`
	Errors   int64  `json:"errors"`
}

type limiterJSON struct {
	Name       string       `json:"name"`
	Kind       inspect.Kind `json:"kind"`
	Rate       int64        `json:"rate"`
	IntervalMS float64      `json:"interval_ms"`
	PerSecond  float64      `json:"per_second"`
	Available  int64        `json:"available"`
	Window     windowJSON   `json:"window"`
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
	Stale *feed.Stale `json:"stale,omitempty"`
}

func toLimiterJSON(l inspect.LimiterInfo, w inspect.Counts) limiterJSON {
	out := limiterJSON{Name: l.Name, Kind: l.Kind, Rate: l.Rate, IntervalMS: l.IntervalMS,
		PerSecond: l.PerSecond, Available: l.Available,
		Window:           windowJSON{Acquired: w.Acquired, Errors: w.Errors},
		AvailableUnknown: l.AvailableUnknown, RejectionsHidden: l.RejectionsHidden,
		Grants: l.Grants, GrantsKnown: l.GrantsKnown, Stale: feed.StaleOf(l.Stale),
		Recognised: l.Recognised, Facts: l.Facts}
	if !l.RejectionsHidden {
		out.Window.Rejected = &w.Rejected
	}
	switch {
	case inspect.IsConvention(l.Kind) && l.TTL != 0:
		count, ttl := l.Count, feed.LeaseMS(l.TTL)
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
		count, known, ttl := l.Count, l.LimitKnown, feed.LeaseMS(l.TTL)
		out.Count, out.LimitKnown, out.TTLMS = &count, &known, &ttl
		if known {
			limit := l.Limit
			out.Limit = &limit
		}
	}
	return out
}

// lockRow is a lock as the pages show it.
func (s *Server) lockRow(l inspect.LockInfo) views.LockRow {
	row := views.LockRow{Name: l.Name, Kind: string(l.Kind), PTTLMS: feed.LeaseMS(l.PTTL), Mode: l.Mode,
		WaitersTotal: l.WaitersTotal, FencingToken: l.FencingToken, Channel: l.Channel, Deadline: l.Deadline,
		Stale: staleMark(l.Stale), Recognised: l.Recognised}
	a := s.annotated(l)
	row.Holders = holderRows(a.Holders)
	row.Subscribers = l.Subscribers
	for _, w := range a.Waiters {
		waiting := int64(-1)
		if w.WaitingMS != nil {
			waiting = *w.WaitingMS
		}
		row.Waiters = append(row.Waiters, views.WaiterRow{ID: w.ID, Owner: w.Owner, Who: w.Who, Deadline: w.Deadline,
			RemainingMS: w.RemainingMS, WaitingMS: waiting, Channel: w.Channel})
	}
	sn := s.live.Latest()
	if sn != nil {
		row.FirstSeen = sn.FirstSeen[l.Name]
	}
	row.Wait = waitRow(waitOf(sn, l.Name).TenSeconds)
	return row
}

func holderRows(hs []inspect.Holder) []views.HolderRow {
	var out []views.HolderRow
	for _, h := range hs {
		out = append(out, views.HolderRow{ID: h.ID, Count: h.Count, Mode: h.Mode, LeaseMS: h.LeaseMS,
			Who: h.Who, HeldMS: h.HeldMS, HeldSinceSeen: h.HeldSinceSeen, RenewedAgoMS: h.RenewedAgoMS})
	}
	return out
}

// limiterRow is a limiter as the tables, tiles and detail page show it.
func (s *Server) limiterRow(l inspect.LimiterInfo, w inspect.Counts) views.LimiterRow {
	row := views.LimiterRow{Name: l.Name, Kind: string(l.Kind), Rate: l.Rate, IntervalMS: l.IntervalMS,
		PerSecond: l.PerSecond, Available: l.Available, Window: counts(w),
		AvailableUnknown: l.AvailableUnknown, RejectionsHidden: l.RejectionsHidden,
		Grants: l.Grants, GrantsKnown: l.GrantsKnown,
		Algorithm: l.Algorithm, PerClient: l.PerClient, ResetInMS: l.ResetIn.Milliseconds(),
		NextFreeInMS: l.NextFreeIn.Milliseconds(), KeepAliveMS: l.KeepAliveMS,
		Count: l.Count, Limit: l.Limit, LimitKnown: l.LimitKnown, TTLMS: feed.LeaseMS(l.TTL),
		Stale: staleMark(l.Stale), Recognised: l.Recognised, Facts: factRows(l.Facts)}
	row.ResetText, row.Resettable = l.DescribeReset()
	for _, p := range s.live.History().Spark(l.Name, views.SparkPoints, views.SparkStepMS) {
		row.Spark = append(row.Spark, counts(p))
	}
	return row
}

// confirmPage turns the store's force-unlock plan into the confirmation
// page's steps.
func confirmPage(l *inspect.LockInfo, h inspect.Holder) views.ForceUnlockConfirmPage {
	plan := l.ForceUnlockPlan(h.ID)
	m := views.ForceUnlockConfirmPage{Name: l.Name, Kind: string(l.Kind), Holder: h.ID, Count: h.Count,
		Channel: plan.Channel, Message: plan.Message, RemovesField: plan.RemovesField != "",
		Keeps: plan.Keeps, Summary: plan.Summary}
	for _, k := range plan.Deletes {
		if k != l.Name {
			m.Deletes = append(m.Deletes, k)
		}
	}
	return m
}

// unlockFlash picks the flash code after a force-unlock from what it did.
func unlockFlash(plan inspect.ForceUnlockPlan) string {
	if plan.RemovesField != "" {
		return "holder-removed"
	}
	return "unlocked"
}

// staleMark is the row marker of an object shown as last read.
func staleMark(st *inspect.StaleRead) *views.StaleMark {
	if st == nil {
		return nil
	}
	return &views.StaleMark{Node: st.Node, LastRead: st.LastRead, ClusterDown: st.ClusterDown}
}

// factRows are a convention's facts in name order.
func factRows(f map[string]string) []views.Fact {
	out := make([]views.Fact, 0, len(f))
	for k, v := range f {
		out = append(out, views.Fact{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b views.Fact) int { return strings.Compare(a.Name, b.Name) })
	return out
}
