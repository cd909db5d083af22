package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/inspect/whatif"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/live"
)

// Presenters of the history's views: the limiter chart, the lock timeline
// and its waits, the what-if beside the edit form, and the overview's
// thumbnails (busiest limiters, most contended locks).

// overviewCharts bounds the overview's 24 h thumbnails (a history read each).
const overviewCharts = 5

// limiterChart is l's history over span as the chart shows it.
func (s *Server) limiterChart(ctx context.Context, l *inspect.LimiterInfo, span string, small bool) (views.LimiterChart, error) {
	ch := views.LimiterChart{Name: l.Name, Span: span, RejectionsHidden: l.RejectionsHidden, Small: small}
	lh, err := s.limiterHistory(ctx, l.Name, span)
	if errors.Is(err, errNoHistory) {
		ch.Off = true
		return ch, nil
	}
	if err != nil {
		return ch, err
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
	for _, r := range lh.Changes {
		ch.Markers = append(ch.Markers, views.ChartMarker{T: r.Time, Label: changeLabel(r)})
	}
	return ch, nil
}

// changeLabel says what an audited change did, in a marker's title.
func changeLabel(r inspect.AuditRecord) string {
	var b strings.Builder
	b.WriteString(r.Action)
	if r.Role != "" {
		b.WriteString(" by " + r.Role)
	}
	if r.Before != "" || r.After != "" {
		fmt.Fprintf(&b, ": %s → %s", r.Before, r.After)
	}
	if r.Reason != "" {
		b.WriteString(" (" + r.Reason + ")")
	}
	return b.String()
}

// lockTimeline is name's holds over span, one colour per client.
func (s *Server) lockTimeline(ctx context.Context, name, span string) (views.LockTimeline, error) {
	tl := views.LockTimeline{Name: name, Span: span}
	lh, _, err := s.cachedLock(ctx, name, span)
	if errors.Is(err, errNoHistory) {
		tl.Off = true
		return tl, nil
	}
	if err != nil {
		return tl, err
	}
	tl.Kept = lh.Kept
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
	return tl, nil
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

// overviewLockThumbs are the last 24 h of waits of the locks with the most
// contended acquisitions in them.
func (s *Server) overviewLockThumbs(ctx context.Context) []views.WaitStrip {
	if s.hist.Load() == nil {
		return nil
	}
	top, err := s.cachedContended(ctx, overviewCharts, history.SpanDay)
	if err != nil {
		s.log.Warn("reading the most contended locks' history for the overview", "err", err)
		return nil
	}
	to := time.Now().UTC()
	out := make([]views.WaitStrip, 0, len(top))
	for _, l := range top {
		out = append(out, waitStrip(l.Name, to.Add(-24*time.Hour), to, l.Wait, true))
	}
	return out
}

// holdClient names the client of a hold: its registered application, or
// the holder itself when it registered none.
func holdClient(h history.Hold) string {
	if h.Client == nil || h.Client.App == "" {
		return h.Holder
	}
	return fmt.Sprintf("%s@%s pid %d", h.Client.App, h.Client.Host, h.Client.PID)
}

// whatIfForm reads the what-if of the limiter page's GET form (the edit
// form's "What if?" button, or a viewer's own form): the form as typed
// with a message under a bad field (status 400), else the result.
func (s *Server) whatIfForm(c echo.Context, l *inspect.LimiterInfo) (views.EditForm, *views.WhatIf, int) {
	form := views.EditForm{
		Rate:       strings.TrimSpace(c.QueryParam(views.FieldRate)),
		IntervalMS: strings.TrimSpace(c.QueryParam(views.FieldIntervalMS)),
		KeepState:  c.QueryParam(views.FieldKeepState),
	}
	edit, verr := parseLimiterForm(form)
	var res *whatif.Result
	if verr == nil {
		var err error
		res, err = s.whatIf(c.Request().Context(), l, edit)
		switch he := toHTTPError(err); {
		case err == nil:
		case he.Status == http.StatusBadRequest && (he.Field == views.FieldRate || he.Field == views.FieldIntervalMS):
			verr = he
		default:
			return form, &views.WhatIf{Rate: form.Rate, IntervalMS: form.IntervalMS, Error: he.Message}, he.Status
		}
	}
	if verr != nil {
		form.Errors = map[string]string{verr.Field: verr.Message}
		return form, nil, http.StatusBadRequest
	}
	wi := &views.WhatIf{Rate: form.Rate, IntervalMS: form.IntervalMS, SpanS: res.SpanS, FineS: res.FineS, Attempts: res.Attempts,
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

// overviewThumbs are the last 24 h of the busiest limiters now.
func (s *Server) overviewThumbs(ctx context.Context, sn *live.Snapshot) []views.LimiterChart {
	if s.hist.Load() == nil {
		return nil
	}
	var out []views.LimiterChart
	for _, l := range topLimiters(sn, overviewCharts) {
		ch, err := s.limiterChart(ctx, &l, history.SpanDay, true)
		if err != nil {
			s.log.Warn("reading a limiter's history for the overview", "limiter", l.Name, "err", err)
			return out // Redis is struggling: one warning, not one per chart
		}
		out = append(out, ch)
	}
	return out
}
