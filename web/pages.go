package web

import (
	"bytes"
	"cmp"
	"errors"
	"io/fs"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/static"
	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/auth"
	"github.com/lockwarden/lockwarden/web/events"
	"github.com/lockwarden/lockwarden/web/live"
)

// overviewEvents is how many events the overview passes to its list.
const overviewEvents = 20

// overviewBusiest is how many limiters the overview lists; wallTiles is
// how many get a tile on the wall.
const (
	overviewBusiest = 10
	wallTiles       = 24
)

// render writes a page. It renders into memory first, so a failing
// component ends in a clean error page rather than half a document.
func (s *Server) render(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.HTMLBlob(status, buf.Bytes())
}

// layout fills what every page shares.
func (s *Server) layout(c echo.Context, title, active string) views.Layout {
	l := views.Layout{Title: title, Active: active, Now: time.Now()}
	id := identityOf(c)
	l.Role = id.Role.String()
	l.ReadOnly = id.Role != auth.RoleAdmin
	l.CanSignOut = id.Role != auth.RoleNone && !id.Bearer && !s.auth.LocalMode()
	if sn := s.live.Latest(); sn != nil {
		l.RedisDown = !sn.RedisUp
		l.Deadlocks = len(sn.Deadlocks)
	}
	l.NodesDown = s.live.NodesDown()
	l.Flash, l.FlashKind = flashFor(c.QueryParam("flash"), s.flashName(c))
	return l
}

// flashFor turns a flash code from a redirect into its message. Codes, not
// text, travel in the link; the object's name is shown only when the
// console signed it into the link itself (flashName), so a link made
// elsewhere cannot put words into a success banner.
func flashFor(code, name string) (string, string) {
	the := func(what string) string {
		if name == "" {
			return "The " + what
		}
		return strings.ToUpper(what[:1]) + what[1:] + " " + strconv.Quote(name)
	}
	switch code {
	case "unlocked":
		return the("lock") + " was force-unlocked.", views.FlashOK
	case "holder-removed":
		if name == "" {
			return "The holder was removed from the lock; the other holders keep it.", views.FlashOK
		}
		return "The holder was removed from lock " + strconv.Quote(name) + "; the other holders keep it.", views.FlashOK
	case "reset":
		return the("counter") + " was reset.", views.FlashOK
	case "saved":
		return the("limiter") + " was updated.", views.FlashOK
	}
	return "", ""
}

func counts(c inspect.Counts) views.Counts {
	return views.Counts{Acquired: c.Acquired, Rejected: c.Rejected, Errors: c.Errors}
}

func eventRows(evs []events.Event) []views.EventRow {
	out := make([]views.EventRow, 0, len(evs))
	for _, e := range evs {
		out = append(out, views.EventRow{Type: string(e.Type), Name: e.Name, Channel: e.Channel,
			Message: e.Message, Holder: e.Holder, At: e.At})
	}
	return out
}

// limiterRows are the pages' rows for ls, with the snapshot's windows.
func (s *Server) limiterRows(sn *live.Snapshot, ls []inspect.LimiterInfo) []views.LimiterRow {
	rows := make([]views.LimiterRow, 0, len(ls))
	for _, l := range ls {
		rows = append(rows, s.limiterRow(l, sn.Window(l.Name)))
	}
	return rows
}

// topLimiters is the n limiters a summary shows first: those over the
// alert thresholds (worst first), then the busiest; ties by name.
func topLimiters(sn *live.Snapshot, n int) []inspect.LimiterInfo {
	type ranked struct {
		l     *inspect.LimiterInfo
		level int
		total int64
	}
	rs := make([]ranked, 0, len(sn.Limiters))
	for i := range sn.Limiters {
		l := &sn.Limiters[i]
		w := counts(sn.Window(l.Name))
		level := 0
		if !l.RejectionsHidden {
			switch views.RatioClass(w) {
			case "ratio-bad":
				level = 2
			case "ratio-warn":
				level = 1
			}
		}
		rs = append(rs, ranked{l, level, w.Total()})
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if c := cmp.Compare(b.level, a.level); c != 0 {
			return c
		}
		if c := cmp.Compare(b.total, a.total); c != 0 {
			return c
		}
		return strings.Compare(a.l.Name, b.l.Name)
	})
	out := make([]inspect.LimiterInfo, 0, min(n, len(rs)))
	for _, r := range rs[:min(n, len(rs))] {
		out = append(out, *r.l)
	}
	return out
}

func (s *Server) handleOverview(c echo.Context) error {
	sn, err := s.snapshotFor()
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.Overview(views.OverviewPage{
		Layout:       s.layout(c, "Overview", views.NavOverview),
		LockCount:    len(sn.Locks),
		LimiterCount: len(sn.Limiters),
		Busiest:      s.limiterRows(sn, topLimiters(sn, overviewBusiest)),
		Events:       eventRows(s.events.Recent(overviewEvents)),
		Alerts:       s.alertRows(),
		Charts:       s.overviewThumbs(c.Request().Context(), sn),
		LockCharts:   s.overviewLockThumbs(c.Request().Context()),
	}))
}

func (s *Server) handleLocksPage(c echo.Context) error {
	_, q, p, err := s.lockList(c)
	if err != nil {
		return err
	}
	page := views.LocksPage{Layout: s.layout(c, "Locks", views.NavLocks), Match: q.Match,
		Nav: listNav("/locks", q, lockSorts, lockKinds, p.Total, len(p.Rows), p.Next)}
	page.Locks = make([]views.LockRow, 0, len(p.Rows))
	for _, l := range p.Rows {
		page.Locks = append(page.Locks, s.lockRow(l))
	}
	return s.render(c, http.StatusOK, views.Locks(page))
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
	if errors.Is(err, store.ErrNotFound) && tl.Kept {
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

func (s *Server) handleLimitersPage(c echo.Context) error {
	sn, q, p, err := s.limiterList(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.Limiters(views.LimitersPage{
		Layout:   s.layout(c, "Limiters", views.NavLimiters),
		Limiters: s.limiterRows(sn, p.Rows),
		Nav:      listNav("/limiters", q, limiterSorts, limiterKinds, p.Total, len(p.Rows), p.Next),
	}))
}

// limiterPage builds the detail page around form, which is empty for a
// plain GET and the submitted values for a rejected POST.
func (s *Server) limiterPage(c echo.Context, l *inspect.LimiterInfo, w inspect.Counts, form views.EditForm) (views.LimiterDetailPage, error) {
	page := views.LimiterDetailPage{
		Layout:  s.layout(c, l.Name, views.NavLimiters),
		Limiter: s.limiterRow(*l, w),
		Form:    form,
	}
	for _, p := range s.live.History().Recent(l.Name, views.RollingRows) {
		page.Rolling = append(page.Rolling, views.RollingRow{At: time.UnixMilli(p.At).UTC(),
			Acquired: p.Window.Acquired, Rejected: p.Window.Rejected, Errors: p.Window.Errors})
	}
	chart, err := s.limiterChart(c.Request().Context(), l, historySpanParam(c), false)
	if err != nil {
		return page, err
	}
	page.Chart = chart
	if l.Kind != inspect.KindRedissonLimiter {
		return page, nil
	}
	// Both of Redisson's behaviours, described for the rate in the form
	// (the current one until the admin types another), so the page says
	// what will happen before it happens.
	edit := inspect.LimiterEdit{Rate: l.Rate, IntervalMS: l.IntervalMS}
	if e, err := parseLimiterForm(form); err == nil && form.Rate != "" {
		edit.Rate, edit.IntervalMS = e.Rate, e.IntervalMS
	}
	edit.KeepState = true
	page.KeepText = l.DescribeEdit(edit)
	edit.KeepState = false
	page.ResetText = l.DescribeEdit(edit)
	if l.PerClient {
		clients, err := s.insp.RedissonClients(c.Request().Context(), l.Name)
		if err != nil {
			return page, err
		}
		for _, cl := range clients {
			page.Clients = append(page.Clients, views.ClientRow{ClientID: cl.ClientID, Available: cl.Available,
				Used: cl.Used, ResetInMS: cl.ResetInMS})
		}
	}
	return page, nil
}

func (s *Server) handleLimiterPage(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	l, w, err := s.limiterWithWindow(c, name)
	if err != nil {
		return err
	}
	form, status := views.EditForm{}, http.StatusOK
	var wi *views.WhatIf
	if c.QueryParam("whatif") != "" {
		form, wi, status = s.whatIfForm(c, l)
	}
	page, err := s.limiterPage(c, l, w, form)
	if err != nil {
		return err
	}
	page.WhatIf = wi
	return s.render(c, status, views.LimiterDetail(page))
}

// handleLimiterForm applies the edit form. Bad input re-renders the page
// with 400, the typed values and the message under the field; Redis is
// not touched.
func (s *Server) handleLimiterForm(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	form := views.EditForm{
		Rate:       strings.TrimSpace(c.FormValue(views.FieldRate)),
		IntervalMS: strings.TrimSpace(c.FormValue(views.FieldIntervalMS)),
		KeepState:  c.FormValue(views.FieldKeepState),
	}
	edit, verr := parseLimiterForm(form)
	if verr == nil {
		verr = s.checkKeepState(c, name, form.KeepState, &edit)
	}
	if verr == nil {
		edit.Name = name
		_, err := s.admin.ModifyLimiter(c.Request().Context(), s.actor(c), edit)
		recorded(c)
		if err == nil {
			q := s.flashQuery(c, "saved", name)
			return c.Redirect(http.StatusSeeOther, views.LimiterURL(name)+"?"+q.Encode())
		}
		if verr = inspect.ErrorOf(err); verr.Code != inspect.CodeInvalid {
			return err
		}
	}
	l, w, err := s.limiterWithWindow(c, name)
	if err != nil {
		return err
	}
	field := verr.Field
	if field != views.FieldRate && field != views.FieldIntervalMS && field != views.FieldKeepState {
		field = ""
	}
	form.Errors = map[string]string{field: verr.Message}
	page, err := s.limiterPage(c, l, w, form)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusBadRequest, views.LimiterDetail(page))
}

// checkKeepState reads the form's keep/reset choice into edit. A Redisson
// limiter's form must say which: the two differ in how many permits are
// handed out right after, and the page describes both.
func (s *Server) checkKeepState(c echo.Context, name, choice string, edit *admin.LimiterEdit) *inspect.Error {
	switch choice {
	case views.KeepStateKeep:
		edit.KeepState = true
		return nil
	case views.KeepStateReset:
		return nil
	case "":
	default:
		return inspect.Invalid(views.FieldKeepState, "keep_state must be \"keep\" or \"reset\"")
	}
	l, err := s.insp.GetLimiter(c.Request().Context(), name)
	if err == nil && l.Kind == inspect.KindRedissonLimiter {
		return inspect.Invalid(views.FieldKeepState, "choose whether the running windows are kept or reset")
	}
	return nil // other kinds have no choice; errors surface in modifyLimiter
}

// handleResetCounterForm resets an access counter and goes back to its page.
func (s *Server) handleResetCounterForm(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	err = s.admin.ResetCounter(c.Request().Context(), s.actor(c), admin.ResetCounter{Name: name})
	recorded(c)
	if err != nil {
		return err
	}
	q := s.flashQuery(c, "reset", name)
	return c.Redirect(http.StatusSeeOther, "/limiters?"+q.Encode())
}

// parseLimiterForm reads the form's text fields with the API's rules.
func parseLimiterForm(f views.EditForm) (admin.LimiterEdit, *inspect.Error) {
	if f.Rate == "" {
		return admin.LimiterEdit{}, inspect.Invalid(views.FieldRate, "rate is required")
	}
	rate, err := strconv.ParseFloat(f.Rate, 64)
	if err != nil {
		return admin.LimiterEdit{}, inspect.Invalid(views.FieldRate, "rate must be a whole number, e.g. 500")
	}
	if f.IntervalMS == "" {
		return admin.LimiterEdit{}, inspect.Invalid(views.FieldIntervalMS, "interval_ms is required")
	}
	interval, err := strconv.ParseFloat(f.IntervalMS, 64)
	if err != nil {
		return admin.LimiterEdit{}, inspect.Invalid(views.FieldIntervalMS, "interval_ms must be a number of milliseconds, e.g. 2 or 0.5")
	}
	edit, err := admin.CheckEdit(rate, interval)
	if err != nil {
		return admin.LimiterEdit{}, inspect.ErrorOf(err)
	}
	return edit, nil
}

func (s *Server) handleEventsPage(c echo.Context) error {
	return s.render(c, http.StatusOK, views.Events(views.EventsPage{
		Layout: s.layout(c, "Events", views.NavEvents),
		Events: eventRows(s.events.Recent(views.EventRows)),
	}))
}

// handleWall shows a tile for each of the wallTiles most urgent limiters
// and one line for the rest, so the page stays readable and bounded at any
// number of limiters.
func (s *Server) handleWall(c echo.Context) error {
	lockSort, err := wallLockSort(c)
	if err != nil {
		return err
	}
	sn, err := s.snapshotFor()
	if err != nil {
		return err
	}
	top := topLimiters(sn, wallTiles)
	page := views.WallPage{
		Layout:    s.layout(c, "Wall", views.NavWall),
		Limiters:  s.limiterRows(sn, top),
		LockCount: len(sn.Locks),
		LockSort:  lockSort,
		Locks:     wallLocks(sn, lockSort),
		Events:    eventRows(s.events.Recent(views.EventRows)),
		Alerts:    s.alertRows(),
	}
	shown := make(map[string]bool, len(top))
	for _, l := range top {
		shown[l.Name] = true
	}
	for _, l := range sn.Limiters {
		if !shown[l.Name] {
			w := sn.Window(l.Name)
			page.Rest.Count++
			page.Rest.Acquired += w.Acquired
			page.Rest.Rejected += w.Rejected
		}
	}
	return s.render(c, http.StatusOK, views.Wall(page))
}

// renderErrorPage is the HTML side of handleError.
func (s *Server) renderErrorPage(c echo.Context, he *httpError) error {
	page := views.ErrorPage{
		Layout:  s.layout(c, http.StatusText(he.Status), ""),
		Status:  he.Status,
		Message: he.Message,
		Back:    backFor(c.Request()),
	}
	for _, h := range he.Holders {
		page.Holders = append(page.Holders, views.HolderRow{ID: h.ID, Count: h.Count})
	}
	return s.render(c, he.Status, views.ErrorView(page))
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// backFor picks the page an error sends the user back to: the lock for a
// failed force-unlock, else the list the object belongs to.
func backFor(r *http.Request) string {
	p := r.URL.EscapedPath()
	switch {
	case strings.HasPrefix(p, "/locks/") && strings.HasSuffix(p, "/force-unlock"):
		return strings.TrimSuffix(p, "/force-unlock")
	case strings.HasPrefix(p, "/locks/"):
		return "/locks"
	case strings.HasPrefix(p, "/limiters/"):
		return "/limiters"
	}
	return "/"
}

// staticRoutes serves the embedded stylesheet and script. Directory paths
// are not listed.
func (s *Server) staticRoutes(e *echo.Echo) {
	e.GET(views.StaticPrefix+"*", func(c echo.Context) error {
		p := c.Param("*")
		if p == "" || strings.HasSuffix(p, "/") || strings.Contains(p, "..") {
			return inspect.Errorf(inspect.CodeNotFound, "no such file")
		}
		if fi, err := fs.Stat(static.FS, p); err != nil || fi.IsDir() {
			return inspect.Errorf(inspect.CodeNotFound, "no such file")
		}
		c.Response().Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(c.Response(), c.Request(), static.FS, p)
		return nil
	})
}

// handleFavicon answers the browser's automatic /favicon.ico request with
// the embedded icon, so no page logs a 404 for it.
func (s *Server) handleFavicon(c echo.Context) error {
	b, err := fs.ReadFile(static.FS, "favicon.svg")
	if err != nil {
		return c.NoContent(http.StatusNoContent)
	}
	c.Response().Header().Set("Cache-Control", "max-age=86400")
	return c.Blob(http.StatusOK, "image/svg+xml", b)
}
