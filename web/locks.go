package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/listing"
	"github.com/lockwarden/lockwarden/web/live"
	"github.com/lockwarden/lockwarden/web/present"
)

// The lock screens: the list, a lock's page (holders, waiters, waits,
// timeline, deadlocks), the force-unlock confirmation and form, and the
// same under /api/locks. lockJSON decides which of a kind's state a client
// sees, so kind-specific fields appear only on the kinds that have them (a
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
	// ForceUnlock is, per holder, what a force-unlock would do (GET of one
	// lock only).
	ForceUnlock map[string]inspect.ForceUnlockPlan `json:"force_unlock,omitempty"`
	// Stale: the lock is shown as last read, its node not answering.
	Stale *present.Stale `json:"stale,omitempty"`
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
	out := lockJSON{Name: l.Name, Kind: l.Kind, Holders: present.HoldersOf(l.Holders), PTTLMS: present.LeaseMS(l.PTTL),
		Channel: l.Channel, Mode: l.Mode, Stale: present.StaleOf(l.Stale), Acked: holdersAcked(l.Holders)}
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

// lockWaitJSON is what lockJSON says about a lock's waits: "wait" over the
// last 10 s on every row, and on a lock's own page the 1 s, 10 s and
// 1 min windows too.
type lockWaitJSON struct {
	Wait        inspect.WaitStats   `json:"wait"`
	WaitWindows []inspect.WaitStats `json:"wait_windows,omitempty"`
}

// lockWaitFor fills lockWaitJSON; windows adds the three windows.
func lockWaitFor(sn *live.Snapshot, name string, windows bool) lockWaitJSON {
	w := sn.Waits(name)
	out := lockWaitJSON{Wait: w.TenSeconds}
	if windows {
		out.WaitWindows = []inspect.WaitStats{w.Second, w.TenSeconds, w.Minute}
	}
	return out
}

// lockList is the page of the snapshot's locks the request asks for.
func (s *Server) lockList(c echo.Context) (*live.Snapshot, listing.Query, listing.Page[inspect.LockInfo], error) {
	return listOf(s, c, listing.LockSorts, listing.LockKinds, listing.Locks)
}

func (s *Server) handleLocksPage(c echo.Context) error {
	_, q, p, err := s.lockList(c)
	if err != nil {
		return err
	}
	page := views.LocksPage{Layout: s.layout(c, "Locks", views.NavLocks), Match: q.Match,
		Nav: listNav("/locks", q, listing.LockSorts, listing.LockKinds, p.Total, len(p.Rows), p.Next)}
	page.Locks = make([]views.LockRow, 0, len(p.Rows))
	for _, l := range p.Rows {
		page.Locks = append(page.Locks, s.lockRow(l))
	}
	return s.render(c, http.StatusOK, views.Locks(page))
}

// handleAPILocks is one page of the snapshot's locks:
// {"locks": [...], "total": N, "next_cursor": "..."} ("" on the last page).
func (s *Server) handleAPILocks(c echo.Context) error {
	sn, _, p, err := s.lockList(c)
	if err != nil {
		return err
	}
	out := make([]lockJSON, 0, len(p.Rows))
	for _, l := range p.Rows {
		j := toLockJSON(s.annotated(l))
		j.lockWaitJSON = lockWaitFor(sn, l.Name, false)
		out = append(out, j)
	}
	return c.JSON(http.StatusOK, map[string]any{"locks": out, "total": p.Total, "next_cursor": p.Next})
}

func (s *Server) handleLockPage(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	tl, err := s.lockTimeline(c.Request().Context(), name, historySpanParam(c))
	if err != nil {
		return err
	}
	l, err := s.insp.GetLock(c.Request().Context(), name)
	if errors.Is(err, inspect.ErrNotFound) && tl.Kept {
		// Nobody holds it now, but its past is kept: show that.
		return s.render(c, http.StatusOK, views.LockDetail(views.LockDetailPage{
			Layout: s.layout(c, name, views.NavLocks), Lock: views.LockRow{Name: name}, Timeline: tl, Gone: true}))
	}
	if err != nil {
		return inspect.ObjectError("lock", name, err)
	}
	l.Subscribers = s.live.Latest().Subscribers(name)
	return s.render(c, http.StatusOK, views.LockDetail(views.LockDetailPage{
		Layout:    s.layout(c, name, views.NavLocks),
		Lock:      s.lockRow(*l),
		Channel:   l.Channel,
		Stats:     counts(s.live.Latest().Window(name)),
		Waits:     waitRows(s.live.Latest(), name),
		Timeline:  tl,
		Deadlocks: deadlockViews(s.live.Latest(), name),
	}))
}

func (s *Server) handleAPILock(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	l, err := s.insp.GetLock(c.Request().Context(), name)
	if err != nil {
		return inspect.ObjectError("lock", name, err)
	}
	l.Subscribers = s.live.Latest().Subscribers(name)
	j := toLockDetailJSON(s.annotated(*l))
	j.lockWaitJSON = lockWaitFor(s.live.Latest(), name, true)
	return c.JSON(http.StatusOK, j)
}

// lockRow is a lock as the pages show it.
func (s *Server) lockRow(l inspect.LockInfo) views.LockRow {
	row := views.LockRow{Name: l.Name, Kind: string(l.Kind), PTTLMS: present.LeaseMS(l.PTTL), Mode: l.Mode,
		WaitersTotal: l.WaitersTotal, FencingToken: l.FencingToken, Channel: l.Channel, Deadline: l.Deadline,
		Stale: staleMark(l.Stale)}
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
	row.Wait = waitRow(sn.Waits(l.Name).TenSeconds)
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

// waitRows are the lock page's windows: 1 s, 10 s, 1 min.
func waitRows(sn *live.Snapshot, name string) []views.WaitRow {
	w := sn.Waits(name)
	return []views.WaitRow{waitRow(w.Second), waitRow(w.TenSeconds), waitRow(w.Minute)}
}

func waitRow(s inspect.WaitStats) views.WaitRow {
	return views.WaitRow{WindowS: s.WindowS, Acquired: s.Acquired, Contended: s.Contended,
		P50MS: s.P50MS, P99MS: s.P99MS, MaxMS: s.MaxMS}
}

// handleForceUnlockConfirm says exactly what breaking the lock will do. A
// holder that no longer holds it gets the 409 page at once, before the
// admin confirms anything.
func (s *Server) handleForceUnlockConfirm(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	holder := c.QueryParam("holder")
	if holder == "" {
		return inspect.Invalid("holder", "holder is required: pick one on the lock's page")
	}
	return s.renderConfirm(c, http.StatusOK, name, holder, "", "")
}

// renderConfirm renders the confirmation page for holder of name, or the
// 409 page when holder no longer holds it.
func (s *Server) renderConfirm(c echo.Context, status int, name, holder, reason, reasonErr string) error {
	l, err := s.insp.GetLock(c.Request().Context(), name)
	if err != nil {
		return inspect.ObjectError("lock", name, err)
	}
	i := slices.IndexFunc(l.Holders, func(h inspect.Holder) bool { return h.ID == holder })
	if i < 0 {
		return withHolders(inspect.ObjectError("lock", name, inspect.ErrHolderChanged), l.Holders)
	}
	page := confirmPage(l, l.Holders[i])
	page.Layout = s.layout(c, "Force unlock "+name, views.NavLocks)
	page.Reason, page.ReasonError = reason, reasonErr
	return s.render(c, status, views.ForceUnlockConfirm(page))
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

func (s *Server) handleForceUnlockForm(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	holder := c.FormValue("holder")
	if holder == "" {
		return inspect.Invalid("holder", "holder is required: pick one on the lock's page")
	}
	if _, rerr := admin.CheckReason(c.FormValue(views.FieldReason)); rerr != nil {
		// The page again, with the message under the field; nothing changed.
		msg := rerr.Error()
		slotOf(c).detail = msg
		return s.renderConfirm(c, http.StatusBadRequest, name, holder, clipText(c.FormValue(views.FieldReason), views.MaxReasonLen), msg)
	}
	res, err := s.forceUnlock(c, admin.ForceUnlock{Name: name, Holder: holder, Reason: c.FormValue(views.FieldReason)})
	if err != nil {
		return err
	}
	q := s.flashQuery(c, unlockFlash(res.Plan), name)
	return c.Redirect(http.StatusSeeOther, "/locks?"+q.Encode())
}

func (s *Server) handleAPIForceUnlock(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	// A missing field reads as "", which is refused like an empty one.
	var body struct {
		Holder string `json:"holder"`
		Reason string `json:"reason"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if _, err := s.forceUnlock(c, admin.ForceUnlock{Name: name, Holder: body.Holder, Reason: body.Reason}); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"released": true})
}

// forceUnlock runs admin's force-unlock for this request. A lost race
// carries the lock's holders now.
func (s *Server) forceUnlock(c echo.Context, req admin.ForceUnlock) (admin.Unlocked, error) {
	res, err := s.admin.ForceUnlock(c.Request().Context(), s.actor(c), req)
	recorded(c)
	if inspect.CodeOf(err) == inspect.CodeConflict && res.Holders != nil {
		err = withHolders(err, res.Holders)
	}
	return res, err
}

// unlockFlash picks the flash code after a force-unlock from what it did.
func unlockFlash(plan inspect.ForceUnlockPlan) string {
	if plan.RemovesField != "" {
		return "holder-removed"
	}
	return "unlocked"
}

// lockHistoryJSON is GET /api/locks/{name}/history: the holds and waits,
// and the timeline in words (what static/charts.js shows when it redraws).
type lockHistoryJSON struct {
	history.LockHistory
	Summary string `json:"summary"`
}

func (s *Server) handleAPILockHistory(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	span := historySpanParam(c)
	lh, through, err := s.hcache.Lock(ctx, name, span)
	if err != nil {
		return err
	}
	if !lh.Kept {
		// A lock nobody holds has no key: without a history it is unknown.
		if _, err := s.insp.GetLock(ctx, name); err != nil {
			return inspect.ObjectError("lock", name, err)
		}
	}
	setHistoryThrough(c, through)
	return c.JSON(http.StatusOK, lockHistoryJSON{LockHistory: lh, Summary: timelineOf(name, span, lh).Summary()})
}

// lockTimeline is name's holds over span, one colour per client.
func (s *Server) lockTimeline(ctx context.Context, name, span string) (views.LockTimeline, error) {
	lh, _, err := s.hcache.Lock(ctx, name, span)
	if errors.Is(err, history.ErrOff) {
		return views.LockTimeline{Name: name, Span: span, Off: true}, nil
	}
	if err != nil {
		return views.LockTimeline{Name: name, Span: span}, err
	}
	return timelineOf(name, span, lh), nil
}

// timelineOf is lh as the timeline shows it, over span up to now. A
// client's colour is its order of first appearance in lh.Holds, as in
// static/charts.js.
func timelineOf(name, span string, lh history.LockHistory) views.LockTimeline {
	tl := views.LockTimeline{Name: name, Span: span, Kept: lh.Kept}
	tl.To = time.Now().UTC()
	if span == history.SpanDay {
		tl.From = tl.To.Add(-24 * time.Hour)
	} else {
		tl.From = tl.To.Add(-time.Hour)
	}
	colors := map[string]int{}
	for _, h := range lh.Holds {
		client := holdClient(h)
		c, ok := colors[client]
		if !ok {
			c = len(colors)
			colors[client] = c
			tl.Clients = append(tl.Clients, views.TimelineClient{Label: client, Color: c})
		}
		th := views.TimelineHold{Holder: h.Holder, Client: client, From: h.From, To: h.To, Ended: h.Ended,
			Running: h.To.IsZero(), Color: c}
		if th.Running {
			th.To = tl.To
		}
		tl.Holds = append(tl.Holds, th)
	}
	tl.Waits = waitStrip(name, tl.From, tl.To, lh.Wait, false)
	return tl
}

// waitStrip is a lock's waits per minute from..to as the strip draws them.
func waitStrip(name string, from, to time.Time, wait []history.WaitPoint, small bool) views.WaitStrip {
	ws := views.WaitStrip{Name: name, From: from, To: to, Small: small, Minutes: make([]views.WaitMinute, 0, len(wait))}
	for _, p := range wait {
		ws.Minutes = append(ws.Minutes, views.WaitMinute{T: time.Unix(p.T, 0).UTC(), Acquired: p.Acquired,
			Contended: p.Contended, P50MS: p.P50MS, P99MS: p.P99MS, MaxMS: p.MaxMS})
	}
	return ws
}

// holdClient names the client of a hold: its registered application, or
// the holder itself when it registered none.
func holdClient(h history.Hold) string {
	if h.Client == nil || h.Client.App == "" {
		return h.Holder
	}
	return fmt.Sprintf("%s@%s pid %d", h.Client.App, h.Client.Host, h.Client.PID)
}

// lockRoutes adds the lock pages, their API and the force-unlock.
func (s *Server) lockRoutes(e *echo.Echo) {
	e.GET("/locks", s.handleLocksPage)
	e.GET("/locks/:name", s.handleLockPage)
	e.GET("/locks/:name/force-unlock", s.handleForceUnlockConfirm)
	s.mutation(e.POST, "/locks/:name/force-unlock", admin.ActionForceUnlock, s.handleForceUnlockForm)
	e.GET("/api/locks", s.handleAPILocks)
	e.GET("/api/locks/:name", s.handleAPILock)
	e.GET("/api/locks/:name/history", s.handleAPILockHistory)
	s.mutation(e.POST, "/api/locks/:name/force-unlock", admin.ActionForceUnlock, s.handleAPIForceUnlock)
}
