package web

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/whatif"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/admin"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/listing"
	"github.com/lockwarden/lockwarden/web/live"
	"github.com/lockwarden/lockwarden/web/present"
	"github.com/lockwarden/lockwarden/web/why"
)

// The limiter screens: the list, a limiter's page (its windows, chart and
// audited changes), the edit form with its what-if replay, the counter
// reset, and the same under /api/limiters.

// limiterRow is a limiter as the tables, tiles and detail page show it.
func (s *Server) limiterRow(l inspect.LimiterInfo, w inspect.Counts) views.LimiterRow {
	row := views.LimiterRow{Name: l.Name, Kind: string(l.Kind), Rate: l.Rate, IntervalMS: l.IntervalMS,
		PerSecond: l.PerSecond, Available: l.Available, Window: counts(w),
		AvailableUnknown: l.AvailableUnknown, RejectionsHidden: l.RejectionsHidden,
		Grants: l.Grants, GrantsKnown: l.GrantsKnown,
		Algorithm: l.Algorithm, PerClient: l.PerClient, ResetInMS: l.ResetIn.Milliseconds(),
		NextFreeInMS: l.NextFreeIn.Milliseconds(), KeepAliveMS: l.KeepAliveMS,
		Count: l.Count, Limit: l.Limit, LimitKnown: l.LimitKnown, TTLMS: present.LeaseMS(l.TTL),
		Stale: staleMark(l.Stale), Recognised: l.Recognised, Facts: factRows(l.Facts)}
	row.ResetText, row.Resettable = l.DescribeReset()
	for _, p := range s.live.Windows().Spark(l.Name, views.SparkPoints, views.SparkStepMS) {
		row.Spark = append(row.Spark, counts(p))
	}
	return row
}

// limiterRows are the pages' rows for ls, with the snapshot's windows.
func (s *Server) limiterRows(sn *live.Snapshot, ls []inspect.LimiterInfo) []views.LimiterRow {
	rows := make([]views.LimiterRow, 0, len(ls))
	for _, l := range ls {
		rows = append(rows, s.limiterRow(l, sn.Window(l.Name)))
	}
	return rows
}

// limiterList is the page of the snapshot's limiters the request asks for.
func (s *Server) limiterList(c echo.Context) (*live.Snapshot, listing.Query, listing.Page[inspect.LimiterInfo], error) {
	return listOf(s, c, listing.LimiterSorts, listing.LimiterKinds, listing.Limiters)
}

func (s *Server) handleLimitersPage(c echo.Context) error {
	sn, q, p, err := s.limiterList(c)
	if err != nil {
		return err
	}
	page := views.LimitersPage{
		Layout:   s.layout(c, "Limiters", views.NavLimiters),
		Limiters: s.limiterRows(sn, p.Rows),
		Nav:      listNav("/limiters", q, listing.LimiterSorts, listing.LimiterKinds, p.Total, len(p.Rows), len(sn.Limiters), p.Next),
	}
	page.Nav.Empty = emptyText(q, len(sn.Limiters), "limiter", "limiters", "known")
	return s.render(c, http.StatusOK, views.Limiters(page))
}

// handleAPILimiters is one page of the snapshot's limiters, shaped like
// handleAPILocks.
func (s *Server) handleAPILimiters(c echo.Context) error {
	sn, _, p, err := s.limiterList(c)
	if err != nil {
		return err
	}
	out := make([]present.Limiter, 0, len(p.Rows))
	for _, l := range p.Rows {
		out = append(out, present.LimiterOf(l, sn.Window(l.Name)))
	}
	return c.JSON(http.StatusOK, map[string]any{"limiters": out, "total": p.Total, "all": len(sn.Limiters), "next_cursor": p.Next})
}

// limiterWithWindow reads one limiter and its current window.
func (s *Server) limiterWithWindow(c echo.Context, name string) (*inspect.LimiterInfo, inspect.Counts, error) {
	ctx := c.Request().Context()
	l, err := s.insp.GetLimiter(ctx, name)
	if err != nil {
		return nil, inspect.Counts{}, inspect.ObjectError("limiter", name, err)
	}
	smp, err := s.insp.Sample(ctx, nil, []string{name})
	if err != nil {
		return nil, inspect.Counts{}, err
	}
	return l, smp.Stats[name].Window, nil
}

// whyWindows is how many live windows a limiter's answer reads: all
// the console keeps (three minutes of ticks), for the last minute and the
// start of a run of rejections.
const whyWindows = 900

// limiterWhy is the answer for l with its last 1 s window w: the live
// windows, the last hour's history (as the page's chart reads it) and
// the audited changes of the limiter.
func (s *Server) limiterWhy(ctx context.Context, l *inspect.LimiterInfo, w inspect.Counts) (why.Answer, error) {
	in := why.LimiterInput{Limiter: *l, Now: time.Now(), Second: w, Recent: s.live.Windows().Recent(l.Name, whyWindows)}
	lh, through, err := s.hcache.Limiter(ctx, l.Name, history.SpanHour)
	switch {
	case errors.Is(err, history.ErrOff):
	case err != nil:
		return why.Answer{}, err
	case lh.Kept:
		in.History = &lh
	}
	if in.Changes, err = s.hcache.Changes(ctx, l.Name, time.Time{}, through, admin.ActionModify, admin.ActionReset); err != nil {
		return why.Answer{}, err
	}
	return why.Limiter(in), nil
}

// limiterPage builds the detail page around form, which is empty for a
// plain GET and the submitted values for a rejected POST.
func (s *Server) limiterPage(c echo.Context, l *inspect.LimiterInfo, w inspect.Counts, form views.EditForm) (views.LimiterDetailPage, error) {
	page := views.LimiterDetailPage{
		Layout:  s.layout(c, l.Name, views.NavLimiters),
		Limiter: s.limiterRow(*l, w),
		Form:    form,
	}
	for _, p := range s.live.Windows().Recent(l.Name, views.RollingRows) {
		page.Rolling = append(page.Rolling, views.RollingRow{At: time.UnixMilli(p.At).UTC(),
			Acquired: p.Window.Acquired, Rejected: p.Window.Rejected, Errors: p.Window.Errors})
	}
	chart, err := s.limiterChart(c.Request().Context(), l, historySpanParam(c), false)
	if err != nil {
		return page, err
	}
	page.Chart = chart
	a, err := s.limiterWhy(c.Request().Context(), l, w)
	if err != nil {
		return page, err
	}
	page.Why = why.Panel(a, time.Now())
	if l.Kind != inspect.KindRedissonLimiter {
		return page, nil
	}
	// Both of Redisson's behaviours, described for the rate in the form
	// (the current one until the admin types another), so the page says
	// what will happen before it happens.
	edit := inspect.LimiterEdit{Rate: l.Rate, IntervalMS: l.IntervalMS}
	if e, err := admin.ParseEdit(form.Rate, form.IntervalMS); err == nil && form.Rate != "" {
		edit.Rate, edit.IntervalMS = e.Rate, e.IntervalMS
	}
	edit.KeepState = true
	page.KeepText = l.DescribeEdit(edit)
	edit.KeepState = false
	page.ResetText = l.DescribeEdit(edit)
	if l.PerClient {
		for _, cl := range s.limiterClients(l.Name) {
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

func (s *Server) handleAPILimiter(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	l, w, err := s.limiterWithWindow(c, name)
	if err != nil {
		return err
	}
	out := present.LimiterOf(*l, w)
	if l.Kind == inspect.KindRedissonLimiter && l.PerClient {
		out.Clients = s.limiterClients(name)
	}
	return c.JSON(http.StatusOK, out)
}

// handleLimiterForm takes the edit form in two steps. The first answers
// with the page and the confirmation: what the new settings would have
// done to the last hour, and the reason; it changes and records nothing.
// The second (confirm=yes) applies them and goes back to the page
// (post/redirect/get). Bad input, a missing reason included, re-renders
// the form with 400, the typed values and each message under its field.
func (s *Server) handleLimiterForm(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	form := views.EditForm{
		Rate:       strings.TrimSpace(c.FormValue(views.FieldRate)),
		IntervalMS: strings.TrimSpace(c.FormValue(views.FieldIntervalMS)),
		KeepState:  c.FormValue(views.FieldKeepState),
		Reason:     clipText(strings.TrimSpace(c.FormValue(views.FieldReason)), views.MaxReasonLen),
	}
	l, w, err := s.limiterWithWindow(c, name)
	if err != nil {
		return err
	}
	edit, errs := checkEditForm(l, form)
	if len(errs) == 0 && c.FormValue(views.FieldConfirm) == views.ConfirmYes {
		edit.Name = name
		_, err := s.admin.ModifyLimiter(c.Request().Context(), s.actor(c), edit)
		recorded(c)
		if err == nil {
			q := s.flashQuery(c, "saved", name)
			return c.Redirect(http.StatusSeeOther, views.LimiterURL(name)+"?"+q.Encode())
		}
		if e := inspect.ErrorOf(err); e.Code == inspect.CodeInvalid {
			errs = map[string]string{formField(e.Field): e.Message}
		} else {
			return err
		}
	}
	status := http.StatusOK
	if len(errs) > 0 {
		form.Errors, status = errs, http.StatusBadRequest
		slotOf(c).detail = strings.Join(slices.Sorted(maps.Values(errs)), "; ")
	} else {
		previewed(c)
	}
	page, err := s.limiterPage(c, l, w, form)
	if err != nil {
		return err
	}
	if status == http.StatusOK {
		page.Confirm = &views.EditConfirm{Rate: form.Rate, IntervalMS: form.IntervalMS, KeepState: form.KeepState, Reason: form.Reason,
			From: views.Rule(string(l.Kind), l.Rate, l.IntervalMS, l.PerSecond), To: views.ProposedRule(string(l.Kind), form.Rate, form.IntervalMS)}
		_, page.Confirm.WhatIf, _ = s.whatIfFor(c, l, form)
	}
	return s.render(c, status, views.LimiterDetail(page))
}

// checkEditForm reads the form with the API's rules and l's bounds, and
// says what is wrong with each field (a Redisson limiter's form must say
// whether its running windows are kept: the two differ in how many
// permits are handed out right after, and the page describes both).
func checkEditForm(l *inspect.LimiterInfo, f views.EditForm) (admin.LimiterEdit, map[string]string) {
	errs := map[string]string{}
	edit, err := admin.ParseEdit(f.Rate, f.IntervalMS)
	if err == nil {
		err = admin.CheckBounds(l.Kind, edit)
	}
	if err != nil {
		e := inspect.ErrorOf(err)
		errs[formField(e.Field)] = e.Message
	}
	switch f.KeepState {
	case views.KeepStateKeep:
		edit.KeepState = true
	case views.KeepStateReset:
	case "":
		if l.Kind == inspect.KindRedissonLimiter {
			errs[views.FieldKeepState] = "choose whether the running windows are kept or reset"
		}
	default:
		errs[views.FieldKeepState] = `keep_state must be "keep" or "reset"`
	}
	var rerr error
	if edit.Reason, rerr = admin.CheckEditReason(f.Reason); rerr != nil {
		errs[views.FieldReason] = inspect.ErrorOf(rerr).Message
	}
	return edit, errs
}

// formField is where the form shows a message about field: under it, or
// above the form for a field it does not have.
func formField(field string) string {
	switch field {
	case views.FieldRate, views.FieldIntervalMS, views.FieldKeepState, views.FieldReason:
		return field
	}
	return ""
}

func (s *Server) handleAPIModifyLimiter(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	var body struct {
		Rate       *float64 `json:"rate"`
		IntervalMS *float64 `json:"interval_ms"`
		// KeepState applies to Redisson limiters: false (the default, as
		// Redisson's setRate) restarts the windows, true keeps the grants.
		KeepState *bool `json:"keep_state"`
		// Reason is required: the audit trail keeps it.
		Reason string `json:"reason"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	edit, err := rateBody{Rate: body.Rate, IntervalMS: body.IntervalMS}.check()
	if err != nil {
		return err
	}
	edit.Name, edit.KeepState, edit.Reason = name, body.KeepState != nil && *body.KeepState, body.Reason
	l, err := s.admin.ModifyLimiter(c.Request().Context(), s.actor(c), edit)
	recorded(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, present.LimiterOf(*l, s.live.Latest().Window(name)))
}

// rateBody is the rate and interval a limiter edit and a what-if take.
type rateBody struct {
	Rate       *float64 `json:"rate"`
	IntervalMS *float64 `json:"interval_ms"`
}

// check says which field is missing or wrong, as admin.CheckEdit does.
func (b rateBody) check() (admin.LimiterEdit, error) {
	if b.Rate == nil {
		return admin.LimiterEdit{}, inspect.Invalid("rate", "rate is required")
	}
	if b.IntervalMS == nil {
		return admin.LimiterEdit{}, inspect.Invalid("interval_ms", "interval_ms is required")
	}
	return admin.CheckEdit(*b.Rate, *b.IntervalMS)
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

// handleAPIResetCounter takes no body (an empty JSON object is accepted).
func (s *Server) handleAPIResetCounter(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	if c.Request().ContentLength > 0 {
		var body struct{}
		if err := decodeJSON(c, &body); err != nil {
			return err
		}
	}
	err = s.admin.ResetCounter(c.Request().Context(), s.actor(c), admin.ResetCounter{Name: name})
	recorded(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]bool{"reset": true})
}

// limiterHistoryJSON is GET /api/limiters/{name}/history.
type limiterHistoryJSON struct {
	history.LimiterHistory
	// Changes are the audited changes of the limiter in the span, oldest
	// first: rate edits, resets.
	Changes []inspect.AuditRecord `json:"changes"`
	// Markers are the changes as the chart labels them, and Summary the
	// chart in words: what static/charts.js shows when it redraws.
	Markers []markerJSON `json:"markers"`
	Summary string       `json:"summary"`
	through int64
}

// markerJSON is one change on a chart: T in Unix ms, Label beside its
// line (who: what), Detail the whole record.
type markerJSON struct {
	T      int64  `json:"t"`
	Label  string `json:"label"`
	Detail string `json:"detail"`
}

// limiterHistory is name's steps over span and the changes audited in
// it, at the newest flush (history.Cache: no Redis read between two
// flushes), with the chart they make (hidden: the limiter's rejections
// are not recorded).
func (s *Server) limiterHistory(ctx context.Context, name, span string, hidden bool) (limiterHistoryJSON, views.LimiterChart, error) {
	ch := views.LimiterChart{Name: name, Span: span, RejectionsHidden: hidden}
	lh, through, err := s.hcache.Limiter(ctx, name, span)
	if err != nil {
		return limiterHistoryJSON{}, ch, err
	}
	out := limiterHistoryJSON{LimiterHistory: lh, Changes: []inspect.AuditRecord{}, Markers: []markerJSON{}, through: through}
	if len(lh.Points) > 0 {
		// Rate edits and resets change what a limiter does.
		out.Changes, err = s.hcache.Changes(ctx, name, time.Unix(lh.Points[0].T, 0), through, admin.ActionModify, admin.ActionReset)
		if err != nil {
			return out, ch, err
		}
	}
	ch.StepS, ch.Kept = lh.StepS, lh.Kept
	ch.Points = make([]views.HistoryPoint, 0, len(lh.Points))
	for _, p := range lh.Points {
		ch.Points = append(ch.Points, views.HistoryPoint{T: time.Unix(p.T, 0).UTC(), Acquired: p.Acquired,
			Rejected: p.Rejected, Errors: p.Errors})
	}
	if n := len(lh.Points); n > 0 {
		ch.From, ch.To = time.Unix(lh.Points[0].T, 0).UTC(), time.Unix(lh.Points[n-1].T+lh.StepS, 0).UTC()
	}
	for _, r := range out.Changes {
		m := changeMarker(r)
		ch.Markers = append(ch.Markers, m)
		out.Markers = append(out.Markers, markerJSON{T: m.T.UnixMilli(), Label: m.Label, Detail: m.Detail})
	}
	out.Summary = ch.Summary()
	return out, ch, nil
}

// rejectionsHidden reports whether the snapshot's limiter name keeps no
// rejections (false for a name it does not know).
func (s *Server) rejectionsHidden(name string) bool {
	if sn := s.live.Latest(); sn != nil {
		for i := range sn.Limiters {
			if sn.Limiters[i].Name == name {
				return sn.Limiters[i].RejectionsHidden
			}
		}
	}
	return false
}

func (s *Server) handleAPILimiterHistory(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	out, _, err := s.limiterHistory(ctx, name, historySpanParam(c), s.rejectionsHidden(name))
	if err != nil {
		return err
	}
	if !out.Kept {
		// Without a history, a name Redis does not know is no limiter.
		if _, err := s.insp.GetLimiter(ctx, name); err != nil {
			return inspect.ObjectError("limiter", name, err)
		}
	}
	setHistoryThrough(c, out.through)
	return c.JSON(http.StatusOK, out)
}

// limiterChart is l's history over span as the chart shows it.
func (s *Server) limiterChart(ctx context.Context, l *inspect.LimiterInfo, span string, small bool) (views.LimiterChart, error) {
	_, ch, err := s.limiterHistory(ctx, l.Name, span, l.RejectionsHidden)
	ch.Small = small
	if errors.Is(err, history.ErrOff) {
		return views.LimiterChart{Name: l.Name, Span: span, Small: small, Off: true}, nil
	}
	return ch, err
}

// changeMarker is an audited change as a chart marks it.
func changeMarker(r inspect.AuditRecord) views.ChartMarker {
	who := r.Role
	if who == "" {
		who = "anonymous"
	}
	return views.ChartMarker{T: r.Time, Label: who + ": " + changeWhat(r), Detail: changeLabel(r)}
}

// changeWhat is what a change did, short: the settings that differ
// between the audit's before and after ("rate 20 → 40"), "reset" for a
// counter's reset.
func changeWhat(r inspect.AuditRecord) string {
	if r.Action == admin.ActionReset {
		return "reset"
	}
	before, after := settings(r.Before), settings(r.After)
	var parts []string
	for _, kv := range after {
		was := ""
		for _, b := range before {
			if b[0] == kv[0] {
				was = b[1]
			}
		}
		if was != kv[1] {
			name, unit := kv[0], ""
			if n, ok := strings.CutSuffix(name, "_ms"); ok {
				name, unit = n, " ms"
			}
			parts = append(parts, name+" "+was+" → "+kv[1]+unit)
		}
	}
	if len(parts) == 0 {
		return r.Action
	}
	return strings.Join(parts, ", ")
}

// settings reads an audit state such as "rate=20 interval_ms=100" as
// key-value pairs in order; words without "=" are left out.
func settings(state string) [][2]string {
	var out [][2]string
	for _, f := range strings.Fields(state) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

// changeLabel says what an audited change did, all of it, in words.
func changeLabel(r inspect.AuditRecord) string {
	var b strings.Builder
	b.WriteString(r.Time.UTC().Format("Jan 2 15:04:05") + " UTC " + r.Action)
	if r.Role != "" {
		b.WriteString(" by " + r.Role)
	}
	if r.Fingerprint != "" {
		b.WriteString(" (token " + r.Fingerprint + ")")
	}
	if r.Before != "" || r.After != "" {
		fmt.Fprintf(&b, ": %s → %s", r.Before, r.After)
	}
	if r.Reason != "" {
		b.WriteString("; reason: " + r.Reason)
	}
	return b.String()
}

// handleAPIWhatIf is POST /api/limiters/{name}/what-if: it changes
// nothing, so a viewer may send it (routes registers it as a query).
func (s *Server) handleAPIWhatIf(c echo.Context) error {
	name, err := nameParam(c)
	if err != nil {
		return err
	}
	var body rateBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	edit, err := body.check()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := s.insp.GetLimiter(ctx, name)
	if err != nil {
		return inspect.ObjectError("limiter", name, err)
	}
	if err := admin.CheckBounds(l.Kind, edit); err != nil {
		return err
	}
	res, err := s.hcache.WhatIf(ctx, l, whatif.Settings{Rate: edit.Rate, IntervalMS: edit.IntervalMS}, s.fineDemand(l.Name))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// fineDemand reads name's 200 ms stats buckets the live windows still
// hold, for a what-if.
func (s *Server) fineDemand(name string) func() whatif.Series {
	return func() whatif.Series { return whatif.BucketSeries(s.live.Windows().Buckets(name)) }
}

// whatIfForm reads the what-if of the limiter page's GET form (the edit
// form's "What if?" button, or a viewer's own form): the form as typed
// with a message under a bad field (status 400), else the result.
func (s *Server) whatIfForm(c echo.Context, l *inspect.LimiterInfo) (views.EditForm, *views.WhatIf, int) {
	return s.whatIfFor(c, l, views.EditForm{
		Rate:       strings.TrimSpace(c.QueryParam(views.FieldRate)),
		IntervalMS: strings.TrimSpace(c.QueryParam(views.FieldIntervalMS)),
		KeepState:  c.QueryParam(views.FieldKeepState),
	})
}

// whatIfFor is the what-if of form's settings for l (the GET form's, or
// the edit's confirmation).
func (s *Server) whatIfFor(c echo.Context, l *inspect.LimiterInfo, form views.EditForm) (views.EditForm, *views.WhatIf, int) {
	edit, err := admin.ParseEdit(form.Rate, form.IntervalMS)
	if err == nil {
		err = admin.CheckBounds(l.Kind, edit)
	}
	var verr *inspect.Error
	if err != nil {
		verr = inspect.ErrorOf(err)
	}
	rule := views.ProposedRule(string(l.Kind), form.Rate, form.IntervalMS)
	var res *whatif.Result
	if verr == nil {
		var err error
		res, err = s.hcache.WhatIf(c.Request().Context(), l, whatif.Settings{Rate: edit.Rate, IntervalMS: edit.IntervalMS}, s.fineDemand(l.Name))
		switch e := inspect.ErrorOf(err); {
		case err == nil:
		case e.Code == inspect.CodeInvalid && (e.Field == views.FieldRate || e.Field == views.FieldIntervalMS):
			verr = e
		default:
			he := toHTTPError(err)
			return form, &views.WhatIf{Rate: form.Rate, IntervalMS: form.IntervalMS, Rule: rule, Error: he.Message}, he.Status
		}
	}
	if verr != nil {
		form.Errors = map[string]string{verr.Field: verr.Message}
		return form, nil, http.StatusBadRequest
	}
	wi := &views.WhatIf{Rate: form.Rate, IntervalMS: form.IntervalMS, Rule: rule, SpanS: res.SpanS, FineS: res.FineS, Attempts: res.Attempts,
		ActualAdmitted: res.Actual.Admitted, ActualRejected: res.Actual.Rejected,
		PredictedAdmitted: res.Predicted.Admitted, PredictedRejected: res.Predicted.Rejected,
		PredictedLow: res.Predicted.Low, PredictedHigh: res.Predicted.High, LowerBound: res.LowerBound}
	if c := res.Check; c != nil {
		wi.Check = &views.WhatIfCheck{Recorded: c.Recorded, Replayed: c.Replayed, ErrorPct: c.ErrorPct, Trusted: c.Trusted()}
	}
	for _, p := range res.Points {
		wi.Points = append(wi.Points, views.WhatIfPoint{T: p.T, Attempts: p.Attempts,
			ActualAdmitted: p.Actual.Admitted, ActualRejected: p.Actual.Rejected,
			Admitted: p.Predicted.Admitted, Rejected: p.Predicted.Rejected, Low: p.Predicted.Low, High: p.Predicted.High})
	}
	return form, wi, http.StatusOK
}

// limiterRoutes adds the limiter pages, their API, edits, resets and
// the what-if.
func (s *Server) limiterRoutes(e *echo.Echo) {
	e.GET("/limiters", s.handleLimitersPage)
	e.GET("/limiters/:name", s.handleLimiterPage)
	s.mutation(e.POST, "/limiters/:name", admin.ActionModify, s.handleLimiterForm)
	s.mutation(e.POST, "/limiters/:name/reset", admin.ActionReset, s.handleResetCounterForm)
	e.GET("/api/limiters", s.handleAPILimiters)
	e.GET("/api/limiters/:name", s.handleAPILimiter)
	e.GET("/api/limiters/:name/history", s.handleAPILimiterHistory)
	s.query(e.POST, "/api/limiters/:name/what-if", s.handleAPIWhatIf)
	s.mutation(e.PUT, "/api/limiters/:name", admin.ActionModify, s.handleAPIModifyLimiter)
	s.mutation(e.POST, "/api/limiters/:name/reset", admin.ActionReset, s.handleAPIResetCounter)
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
