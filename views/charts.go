package views

import (
	"fmt"
	"strconv"
	"time"
)

// View models and geometry of the history charts (history.templ): a
// limiter's steps with its audited changes, a lock's holds, and the
// what-if beside what happened. Drawn in Go as SVG, like the sparklines,
// so they show without JS; every bar and hold carries a <title> with its
// exact values.

// Spans a chart offers, as ?span= takes them.
const (
	SpanHour = "1h"
	SpanDay  = "24h"
)

// HistoryPoint is one step of a limiter's history.
type HistoryPoint struct {
	T                          time.Time // the step's start
	Acquired, Rejected, Errors int64
}

// ChartMarker is one audited change at T.
type ChartMarker struct {
	T     time.Time
	Label string // e.g. "modify by admin: rate=10 interval=100 → rate=20 interval=100"
}

// LimiterChart is a limiter's history over one span.
type LimiterChart struct {
	Name  string
	Span  string // SpanHour or SpanDay
	StepS int64
	// From and To bound the span (To is the end of the newest step).
	From, To time.Time
	Points   []HistoryPoint // oldest first, one per step
	Markers  []ChartMarker
	// RejectionsHidden: rejections are not recorded for this limiter.
	RejectionsHidden bool
	// Kept is false when the limiter is not among the busiest kept.
	Kept bool
	// Off: the console keeps no history at all.
	Off bool
	// Small draws the overview's thumbnail.
	Small bool
}

// Chart geometry in SVG user units (CSS stretches the box).
const (
	chartW, chartH   = 720, 140
	thumbW, thumbH   = 240, 40
	chartMaxBars     = 360
	thumbMaxBars     = 96
	timelineW        = 720
	timelineRowH     = 22
	timelineMaxHolds = 200
)

// ChartBar is one drawn bar: the sum of one or more steps.
type ChartBar struct {
	X, W                       float64
	AcqY, AcqH, RejY, RejH     float64
	ErrY, ErrH                 float64
	From                       time.Time
	Acquired, Rejected, Errors int64
}

// chartSize is a chart's box and its most bars: the overview's thumbnail
// (thumbnail height th) or the page's chart (width w, height h).
func chartSize(small bool, w, h, th float64) (float64, float64, int) {
	if small {
		return thumbW, th, thumbMaxBars
	}
	return w, h, chartMaxBars
}

func (c LimiterChart) size() (w, h float64, maxBars int) {
	return chartSize(c.Small, chartW, chartH, thumbH)
}

func (c LimiterChart) viewBox() string {
	w, h, _ := c.size()
	return fmt.Sprintf("0 0 %g %g", w, h)
}

// bars groups the points into at most maxBars bars, scaled to the largest.
func (c LimiterChart) bars() []ChartBar {
	w, h, maxBars := c.size()
	n := len(c.Points)
	if n == 0 {
		return nil
	}
	per := (n + maxBars - 1) / maxBars
	bars := make([]ChartBar, 0, (n+per-1)/per)
	var top int64 = 1
	for i := 0; i < n; i += per {
		b := ChartBar{From: c.Points[i].T}
		for _, p := range c.Points[i:min(i+per, n)] {
			b.Acquired += p.Acquired
			b.Rejected += p.Rejected
			b.Errors += p.Errors
		}
		top = max(top, b.Acquired+b.Rejected+b.Errors)
		bars = append(bars, b)
	}
	bw := w / float64(len(bars))
	scale := (h - 2) / float64(top)
	for i := range bars {
		b := &bars[i]
		b.X, b.W = float64(i)*bw, max(bw-0.5, 0.5)
		b.AcqH = float64(b.Acquired) * scale
		b.RejH = float64(b.Rejected) * scale
		b.ErrH = float64(b.Errors) * scale
		b.AcqY = h - b.AcqH
		b.RejY = b.AcqY - b.RejH
		b.ErrY = b.RejY - b.ErrH
	}
	return slicesNonEmpty(bars)
}

// slicesNonEmpty drops bars without attempts: only they need a <g>.
func slicesNonEmpty(bars []ChartBar) []ChartBar {
	out := bars[:0]
	for _, b := range bars {
		if b.Acquired+b.Rejected+b.Errors > 0 {
			out = append(out, b)
		}
	}
	return out
}

// barTitle is a bar's exact values, shown on hover.
func (c LimiterChart) barTitle(b ChartBar) string {
	rej := itoa(b.Rejected) + " rejected"
	if c.RejectionsHidden {
		rej = "rejected not visible"
	}
	return fmt.Sprintf("%s UTC: %d acquired, %s, %d errors", b.From.UTC().Format("Jan 2 15:04:05"), b.Acquired, rej, b.Errors)
}

// xAt places t on a w-wide axis from..to (clamped).
func xAt(t, from, to time.Time, w float64) float64 {
	span := to.Sub(from)
	if span <= 0 {
		return 0
	}
	x := float64(t.Sub(from)) / float64(span) * w
	return min(max(x, 0), w)
}

func (c LimiterChart) markerX(m ChartMarker) string {
	w, _, _ := c.size()
	return fmtF(xAt(m.T, c.From, c.To, w))
}

func (c LimiterChart) height() string { _, h, _ := c.size(); return fmtF(h) }

func (c LimiterChart) empty() bool {
	for _, p := range c.Points {
		if p.Acquired+p.Rejected+p.Errors > 0 {
			return false
		}
	}
	return true
}

// SpanURL is the limiter page showing span.
func (c LimiterChart) SpanURL(span string) string { return LimiterURL(c.Name) + "?span=" + span }

func fmtF(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// bytesText is a size in B, KiB or MiB.
func bytesText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// LockTimeline is a lock's holds over one span.
type LockTimeline struct {
	Name     string
	Span     string
	From, To time.Time
	Holds    []TimelineHold // running first, then ended newest first
	Clients  []TimelineClient
	// Waits are the lock's waits per minute over the same span.
	Waits WaitStrip
	Kept  bool
	Off   bool
}

// TimelineHold is one hold; Color indexes Clients.
type TimelineHold struct {
	Holder, Client string
	From, To       time.Time // To is the span's end for a running hold
	Running        bool
	Ended          string // released, handed-off, expired, force-unlocked
	Color          int
}

// TimelineClient is one colour of the strip: a client (app@host pid), or
// the holder id when it registered none.
type TimelineClient struct {
	Label string
	Color int
}

// timelineColors is how many client colours app.css defines (tl-c0...).
const timelineColors = 8

func (t LockTimeline) viewBox() string {
	return fmt.Sprintf("0 0 %d %d", timelineW, timelineRowH)
}

func (t LockTimeline) holdX(h TimelineHold) string {
	return fmtF(xAt(h.From, t.From, t.To, timelineW))
}

func (t LockTimeline) holdW(h TimelineHold) string {
	x0, x1 := xAt(h.From, t.From, t.To, timelineW), xAt(h.To, t.From, t.To, timelineW)
	return fmtF(max(x1-x0, 1))
}

func holdClass(h TimelineHold) string {
	c := "tl-hold tl-c" + strconv.Itoa(h.Color%timelineColors)
	if h.Ended == "force-unlocked" || h.Ended == "expired" {
		c += " tl-broken"
	}
	return c
}

func clientClass(c TimelineClient) string {
	return "tl-key tl-c" + strconv.Itoa(c.Color%timelineColors)
}

func holdTitle(h TimelineHold) string {
	end := "still held"
	if !h.Running {
		end = h.To.UTC().Format("15:04:05") + " UTC, " + h.Ended
	}
	return fmt.Sprintf("%s (%s): from %s UTC to %s", h.Holder, h.Client, h.From.UTC().Format("15:04:05"), end)
}

// WhatIf is the what-if of the edit form: the last hour's demand at the
// typed rate and interval, beside what happened.
type WhatIf struct {
	Rate, IntervalMS string // as typed
	// SpanS is the time replayed, FineS the part of it from 200 ms buckets.
	SpanS, FineS      float64
	Attempts          int64
	ActualAdmitted    int64
	ActualRejected    int64
	PredictedAdmitted int64
	PredictedRejected int64
	// PredictedLow and PredictedHigh bound the rejections predicted.
	PredictedLow, PredictedHigh int64
	// Check is the replay at today's settings; nil when they are not
	// known (nothing to check against).
	Check      *WhatIfCheck
	LowerBound bool
	Points     []WhatIfPoint
	// Error says why there is no result (the limiter cannot be replayed).
	Error string
}

// WhatIfCheck is the what-if's replay at today's settings beside what
// they did: rejections recorded and replayed, the error in percent, and
// whether it is small enough to present the prediction without a warning.
type WhatIfCheck struct {
	Recorded, Replayed int64
	ErrorPct           float64
	Trusted            bool
}

// WhatIfPoint is one minute of the what-if.
type WhatIfPoint struct {
	T                        time.Time
	Attempts                 int64
	ActualRejected, Rejected int64 // what happened, what would have
	ActualAdmitted, Admitted int64
	Low, High                int64 // the band of Rejected
}

// band is the rejections' band as text ("0 to 12").
func (w WhatIf) band() string {
	return itoa(w.PredictedLow) + " to " + itoa(w.PredictedHigh)
}

// checkText says how the replay at today's settings compares with what
// they did.
func (c WhatIfCheck) text() string {
	return fmt.Sprintf("Replayed at today's settings, the demand gives %s rejections; %s were recorded (%+.1f %%).",
		itoa(c.Replayed), itoa(c.Recorded), c.ErrorPct)
}

// pct is the error as the page's data attribute carries it.
func (c WhatIfCheck) pct() string { return strconv.FormatFloat(c.ErrorPct, 'f', 2, 64) }

// fineText says how much of the span was replayed from 200 ms buckets.
func (w WhatIf) fineText() string {
	switch {
	case w.FineS <= 0:
		return "all of it in 10 s steps"
	case w.FineS >= w.SpanS:
		return "all of it in 200 ms buckets"
	}
	return fmt.Sprintf("the last %s s in 200 ms buckets, the rest in 10 s steps", num(w.FineS))
}

// whatIfBars lays the minutes out: actual rejections above the axis,
// predicted below, on one scale.
type whatIfBar struct {
	X, W, ActH, PredH float64
	P                 WhatIfPoint
}

const whatIfW, whatIfH = 360, 80

func (w WhatIf) bars() []whatIfBar {
	if len(w.Points) == 0 {
		return nil
	}
	var top int64 = 1
	for _, p := range w.Points {
		top = max(top, p.ActualRejected, p.Rejected)
	}
	bw := float64(whatIfW) / float64(len(w.Points))
	half := float64(whatIfH)/2 - 1
	out := make([]whatIfBar, 0, len(w.Points))
	for i, p := range w.Points {
		out = append(out, whatIfBar{X: float64(i) * bw, W: max(bw-0.5, 0.5), P: p,
			ActH: float64(p.ActualRejected) / float64(top) * half, PredH: float64(p.Rejected) / float64(top) * half})
	}
	return out
}

func whatIfViewBox() string { return fmt.Sprintf("0 0 %d %d", whatIfW, whatIfH) }

func whatIfTitle(b whatIfBar) string {
	return fmt.Sprintf("%s UTC: %d attempts; happened %d admitted, %d rejected; would have %d admitted, %d rejected (%d to %d)",
		b.P.T.UTC().Format("15:04"), b.P.Attempts, b.P.ActualAdmitted, b.P.ActualRejected, b.P.Admitted, b.P.Rejected, b.P.Low, b.P.High)
}
