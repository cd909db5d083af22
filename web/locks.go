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
	"github.com/lockwarden/lockwarden/web/why"
)

// The lock screens: the list, a lock's page (holders, waiters, waits,
// timeline, deadlocks), the force-unlock confirmation and form, and the
// same under /api/locks, in present.Lock's words.

// lockJSON is a lock and its waits, as /api/locks says them.
type lockJSON struct {
	present.Lock
	lockWaitJSON
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
	sn, q, p, err := s.lockList(c)
	if err != nil {
		return err
	}
	page := views.LocksPage{Layout: s.layout(c, "Locks", views.NavLocks), Match: q.Match,
		Nav: listNav("/locks", q, listing.LockSorts, listing.LockKinds, p.Total, len(p.Rows), len(sn.Locks), p.Next)}
	page.Nav.Empty = emptyText(q, len(sn.Locks), "lock", "locks", "held")
	page.Locks = make([]views.LockRow, 0, len(p.Rows))
	for _, l := range p.Rows {
		page.Locks = append(page.Locks, s.lockRow(l))
	}
	return s.render(c, http.StatusOK, views.Locks(page))
}

// handleAPILocks is one page of the snapshot's locks:
// {"locks": [...], "total": N, "all": M, "next_cursor": "..."} ("" on the
// last page); total counts the rows the filters pass, all every lock.
func (s *Server) handleAPILocks(c echo.Context) error {
	sn, _, p, err := s.lockList(c)
	if err != nil {
		return err
	}
	out := make([]lockJSON, 0, len(p.Rows))
	for _, l := range p.Rows {
		j := lockJSON{Lock: present.LockOf(s.annotated(l), time.Now())}
		j.lockWaitJSON = lockWaitFor(sn, l.Name, false)
		out = append(out, j)
	}
	return c.JSON(http.StatusOK, map[string]any{"locks": out, "total": p.Total, "all": len(sn.Locks), "next_cursor": p.Next})
}

func (s *Server) handleLockPage(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	tl, err := s.lockTimeline(ctx, name, historySpanParam(c))
	if err != nil {
		return err
	}
	l, err := s.insp.GetLock(ctx, name)
	if errors.Is(err, inspect.ErrNotFound) {
		// Nobody holds it now: when the console listed it within the hour
		// or its past is kept, the page says since when and who held it.
		in, gerr := s.goneInput(ctx, name)
		if gerr != nil {
			return gerr
		}
		known := in.Known() && (in.Gone == nil || in.Gone.Lock)
		if tl.Kept || known {
			return s.render(c, http.StatusOK, views.LockDetail(views.LockDetailPage{
				Layout: s.layout(c, name, views.NavLocks), Lock: views.LockRow{Name: name}, Timeline: tl, Gone: true,
				Violations: violationRows(s.live.Latest(), name), PastDeadlocks: s.pastDeadlockViews(name),
				Why: s.whyPanel(known, func() why.Answer { return why.Gone(in) })}))
		}
	}
	if err != nil {
		return inspect.ObjectError("lock", name, err)
	}
	sn := s.live.Latest()
	l.Subscribers = sn.Subscribers(name)
	return s.render(c, http.StatusOK, views.LockDetail(views.LockDetailPage{
		Layout:        s.layout(c, name, views.NavLocks),
		Lock:          s.lockRow(*l),
		Channel:       l.Channel,
		Stats:         counts(sn.Window(name)),
		Waits:         waitRows(sn, name),
		Timeline:      tl,
		Deadlocks:     deadlockViews(sn, name),
		Violations:    violationRows(sn, name),
		PastDeadlocks: s.pastDeadlockViews(name),
		Why:           s.whyPanel(true, func() why.Answer { return s.lockWhy(sn, *l) }),
	}))
}

// whyPanel is the page's panel for the answer answer gives, when ok.
func (s *Server) whyPanel(ok bool, answer func() why.Answer) *views.WhyPanel {
	if !ok {
		return nil
	}
	return why.Panel(answer(), time.Now())
}

// handleAPIWhy is GET /api/why/{name}: why a lock or a limiter is as it
// is, or since when a name the console listed within the hour is gone
// (why.Answer). It reads the snapshot, the live windows and the history
// cache, as the object's page does; never Redis on its own.
func (s *Server) handleAPIWhy(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	a, err := s.whyOf(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a)
}

// whyOf answers for name: a lock or a limiter of the snapshot, else what
// the console remembers of it; a 404 for a name it never listed.
func (s *Server) whyOf(ctx context.Context, name string) (why.Answer, error) {
	sn, err := s.snapshotFor()
	if err != nil {
		return why.Answer{}, err
	}
	if i := slices.IndexFunc(sn.Locks, func(l inspect.LockInfo) bool { return l.Name == name }); i >= 0 {
		return s.lockWhy(sn, sn.Locks[i]), nil
	}
	if i := slices.IndexFunc(sn.Limiters, func(l inspect.LimiterInfo) bool { return l.Name == name }); i >= 0 {
		return s.limiterWhy(ctx, &sn.Limiters[i], sn.Window(name))
	}
	in, err := s.goneInput(ctx, name)
	if err != nil {
		return why.Answer{}, err
	}
	if !in.Known() {
		return why.Answer{}, inspect.Errorf(inspect.CodeNotFound,
			"no lock or limiter named %q is held or known to the console now, nor was one in the last hour (it lists names matching --match %q)",
			name, s.cfg.match())
	}
	return why.Gone(in), nil
}

// lockWhy is the answer for l as of sn: its holders and waiters with who
// they are, its cycles, its waits over 10 s.
func (s *Server) lockWhy(sn *live.Snapshot, l inspect.LockInfo) why.Answer {
	ds := sn.DeadlocksOf(l.Name)
	for i := range ds {
		// The steps are the snapshot's: annotate copies.
		ds[i].Cycle = slices.Clone(ds[i].Cycle)
		inspect.AnnotateDeadlock(sn.Registry, &ds[i].Deadlock)
	}
	return why.Lock(why.LockInput{Lock: s.annotated(l), Now: time.Now(), Deadlocks: ds, Wait: sn.Waits(l.Name).TenSeconds})
}

// goneInput is what the console remembers of name, a lock or limiter it
// no longer lists: the live layer's memory (the last hour) and the
// history's holds of the last hour.
func (s *Server) goneInput(ctx context.Context, name string) (why.GoneInput, error) {
	sn := s.live.Latest()
	in := why.GoneInput{Name: name, Now: time.Now(), Violations: leaseViolations(sn, name),
		Deadlocks: s.live.EndedDeadlocksOf(name)}
	if g, ok := s.live.Gone(name); ok {
		in.Gone = &g
	} else if g, ok := live.GoneFromSnapshot(sn, name, in.Now); ok {
		// Released since the latest tick, which still lists it: its
		// holders then are the last ones, and now is when it was found free.
		in.Gone = &g
	}
	lh, _, err := s.hcache.Lock(ctx, name, history.SpanHour)
	switch {
	case errors.Is(err, history.ErrOff):
	case err != nil:
		return in, err
	default:
		in.Holds = lh.Holds
	}
	return in, nil
}

func (s *Server) handleAPILock(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := s.insp.GetLock(ctx, name)
	if errors.Is(err, inspect.ErrNotFound) {
		return s.freeLock(c, name)
	}
	if err != nil {
		return inspect.ObjectError("lock", name, err)
	}
	sn := s.live.Latest()
	l.Subscribers = sn.Subscribers(name)
	j := lockJSON{Lock: present.LockDetailOf(s.annotated(*l), time.Now())}
	j.lockWaitJSON = lockWaitFor(sn, name, true)
	return c.JSON(http.StatusOK, lockPastJSON{lockJSON: j, State: "held", Violations: leaseViolations(sn, name),
		PastDeadlocks: s.live.EndedDeadlocksOf(name)})
}

// lockPastJSON is a lock with what happened to it: its lease violations
// and the deadlocks it was part of (each with since and ended).
type lockPastJSON struct {
	lockJSON
	State         string                `json:"state"`
	Violations    []live.LeaseViolation `json:"lease_violations"`
	PastDeadlocks []live.EndedDeadlock  `json:"past_deadlocks"`
}

// freeLockJSON is a lock nobody holds now that the console saw: when it
// was last held and by whom, its waits and its history.
type freeLockJSON struct {
	lockPastJSON
	FreeSince *time.Time           `json:"free_since,omitempty"`
	LastHeld  *history.Hold        `json:"last_held,omitempty"`
	History   *history.LockHistory `json:"history,omitempty"`
}

// lastHeld is the newest ended hold the history or the live memory
// knows of (the history's day, its hour as goneInput read it, the holders
// the console last saw).
func lastHeld(in why.GoneInput, day []history.Hold) *history.Hold {
	for _, holds := range [][]history.Hold{day, in.Holds} {
		for i := range holds {
			if h := holds[i]; !h.To.IsZero() {
				return &h
			}
		}
	}
	if g := in.Gone; g != nil && len(g.Holders) > 0 {
		h := g.Holders[0]
		out := &history.Hold{Holder: h.ID, To: g.LastSeen}
		if h.HeldMS > 0 {
			out.From = g.LastSeen.Add(-time.Duration(h.HeldMS) * time.Millisecond)
		}
		if c := h.Client; c != nil {
			out.Client = &history.Client{App: c.App, Host: c.Host, PID: c.PID}
		}
		return out
	}
	return nil
}

// freeLock answers GET /api/locks/{name} for a lock whose key does not
// exist: a 404 only when the console neither listed it within the hour
// nor keeps its history.
func (s *Server) freeLock(c echo.Context, name string) error {
	ctx := c.Request().Context()
	in, err := s.goneInput(ctx, name)
	if err != nil {
		return err
	}
	lh, _, herr := s.hcache.Lock(ctx, name, history.SpanDay)
	kept := herr == nil && lh.Kept
	if (!in.Known() && !kept) || (in.Gone != nil && !in.Gone.Lock) {
		return inspect.ObjectError("lock", name, inspect.ErrNotFound)
	}
	j := freeLockJSON{lockPastJSON: lockPastJSON{State: why.StateFree, Violations: in.Violations,
		PastDeadlocks: in.Deadlocks}}
	j.Name, j.Holders = name, []inspect.Holder{}
	if w := s.insp.WaitsOf(name, time.Now()); w != nil {
		j.Wait, j.WaitWindows = w.TenSeconds, []inspect.WaitStats{w.Second, w.TenSeconds, w.Minute}
	} else {
		j.lockWaitJSON = lockWaitFor(nil, name, true)
	}
	if kept {
		j.History = &lh
	}
	if g := in.Gone; g != nil {
		j.Kind, j.FreeSince = g.Kind, &g.At
	}
	j.LastHeld = lastHeld(in, lh.Holds)
	if j.LastHeld != nil && j.FreeSince == nil {
		j.FreeSince = &j.LastHeld.To
	}
	return c.JSON(http.StatusOK, j)
}

// lockRow is a lock as the pages show it.
func (s *Server) lockRow(l inspect.LockInfo) views.LockRow {
	row := views.LockRow{Name: l.Name, Kind: string(l.Kind), PTTLMS: present.LeaseMS(l.PTTL), Mode: l.Mode,
		WaitersTotal: l.WaitersTotal, FencingToken: l.FencingToken, Channel: l.Channel, Deadline: l.Deadline,
		Stale: staleMark(l.Stale), WaitingSince: present.WaitingSince(&l), Recognised: l.Recognised}
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
	page := confirmPage(l, s.annotated(*l).Holders[i])
	page.Layout = s.layout(c, "Force unlock "+name, views.NavLocks)
	page.Reason, page.ReasonError = reason, reasonErr
	return s.render(c, status, views.ForceUnlockConfirm(page))
}

// whoOf is a holder's name when the registry gave it one beyond its id
// (inspect.DescribeHolder returns a token itself).
func whoOf(h inspect.Holder) string {
	if h.Who == h.ID {
		return ""
	}
	return h.Who
}

// confirmPage turns the store's force-unlock plan into the confirmation
// page's steps.
func confirmPage(l *inspect.LockInfo, h inspect.Holder) views.ForceUnlockConfirmPage {
	plan := l.ForceUnlockPlan(h.ID)
	m := views.ForceUnlockConfirmPage{Name: l.Name, Kind: string(l.Kind), Holder: h.ID, Count: h.Count, HolderWho: whoOf(h),
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
		th := views.TimelineHold{Holder: h.Holder, Client: client, From: h.From, To: h.To, WorkedTo: h.WorkedTo,
			Ended: h.Ended, Shared: h.Shared(), Running: h.To.IsZero(), Color: c}
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
	// Why answers for limiters too; it lives with the locks because most
	// of what it says is about holders and waiters.
	e.GET("/api/why/:name", s.handleAPIWhy)
	s.mutation(e.POST, "/api/locks/:name/force-unlock", admin.ActionForceUnlock, s.handleAPIForceUnlock)
}
