package views

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/views/words"
)

// View models of the history charts (history.templ): a limiter's steps
// with its audited changes, a lock's holds and waits, and the what-if
// beside what happened. A page carries each chart's frame: caption,
// legend, and a summary in words of what the chart shows (what a screen
// reader reads, and what a browser without scripts gets). static/charts.js
// draws the chart itself, with uPlot, from the history API the figure
// names (data-src), and draws it again after each history flush while the
// page is live.

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
	T time.Time
	// Label is drawn beside the marker: who, and what changed
	// ("admin: rate 20 → 40").
	Label string
	// Detail is the whole audit record in words, for the tooltip.
	Detail string
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

// SpanURL is the limiter page showing span.
func (c LimiterChart) SpanURL(span string) string { return LimiterURL(c.Name) + "?span=" + span }

// DataURL is the history API the chart is drawn from.
func (c LimiterChart) DataURL() string {
	return "/api" + LimiterURL(c.Name) + "/history?span=" + c.Span
}

func (c LimiterChart) empty() bool {
	for _, p := range c.Points {
		if p.Acquired+p.Rejected+p.Errors > 0 {
			return false
		}
	}
	return true
}

// chartID is an element id for a chart's parts: names are any bytes, ids
// of one page must differ, so it is a hash of what the chart shows.
func chartID(kind, name, span string) string {
	h := fnv.New64a()
	h.Write([]byte(kind + "\x00" + name + "\x00" + span))
	return kind + "-" + strconv.FormatUint(h.Sum64(), 36)
}

func (c LimiterChart) summaryID() string { return chartID("limiter-summary", c.Name, c.Span) }

// spanWords names a span in a summary.
func spanWords(span string) string {
	if span == SpanDay {
		return "Last 24 h"
	}
	return "Last hour"
}

// chartClock is a time in a summary: to the second over an hour, to the
// minute over a day.
func chartClock(t time.Time, span string) string {
	if span == SpanDay {
		return t.UTC().Format("15:04")
	}
	return t.UTC().Format("15:04:05")
}

// rateWords is a per-second rate with as many decimals as it needs.
func rateWords(perS float64) string {
	if perS >= 10 {
		return words.Count(int64(math.Round(perS)))
	}
	return num(perS)
}

// Summary says what the chart shows in a few sentences: the span's
// totals, its busiest step, since when it rejects, and its changes.
func (c LimiterChart) Summary() string {
	var b strings.Builder
	var acq, rej, errs, peak int64
	var peakAt time.Time
	for _, p := range c.Points {
		acq, rej, errs = acq+p.Acquired, rej+p.Rejected, errs+p.Errors
		if t := p.Acquired + p.Rejected + p.Errors; t > peak {
			peak, peakAt = t, p.T
		}
	}
	total := acq + rej + errs
	if total == 0 {
		b.WriteString(spanWords(c.Span) + ": no attempts recorded.")
	} else {
		fmt.Fprintf(&b, "%s: %s acquired, ", spanWords(c.Span), words.Count(acq))
		if c.RejectionsHidden {
			b.WriteString("rejections not visible, ")
		} else {
			fmt.Fprintf(&b, "%s rejected (%s %%), ", words.Count(rej), strconv.FormatFloat(float64(rej)*100/float64(total), 'f', 1, 64))
		}
		fmt.Fprintf(&b, "%s errors.", words.Count(errs))
		if step := max(c.StepS, 1); len(c.Points) > 1 {
			fmt.Fprintf(&b, " Busiest %s: %s UTC, %s attempts per second.", stepWords(step), chartClock(peakAt, c.Span),
				rateWords(float64(peak)/float64(step)))
		}
		if !c.RejectionsHidden && rej > 0 {
			b.WriteString(" " + c.rejectionWords())
		}
	}
	switch n := len(c.Markers); {
	case n == 1:
		m := c.Markers[0]
		fmt.Fprintf(&b, " 1 change: %s UTC, %s.", chartClock(m.T, c.Span), m.Label)
	case n > 1:
		m := c.Markers[n-1]
		fmt.Fprintf(&b, " %d changes, the last %s UTC, %s.", n, chartClock(m.T, c.Span), m.Label)
	}
	return b.String()
}

// stepWords names a step: "10 s", "minute".
func stepWords(s int64) string {
	if s == 60 {
		return "minute"
	}
	return strconv.FormatInt(s, 10) + " s"
}

// rejectionWords says since when the limiter rejects, if its last steps
// with attempts rejected, or when it last did.
func (c LimiterChart) rejectionWords() string {
	last, lastActive := -1, -1
	for i, p := range c.Points {
		if p.Rejected > 0 {
			last = i
		}
		if p.Acquired+p.Rejected+p.Errors > 0 {
			lastActive = i
		}
	}
	if last < 0 {
		return ""
	}
	if last != lastActive {
		return "Last rejection " + chartClock(c.Points[last].T, c.Span) + " UTC."
	}
	// The run goes back over steps that rejected, and over idle gaps of
	// at most two steps; a step that admitted all it was asked ends it.
	first, idle := last, 0
	for i := last - 1; i >= 0 && idle <= 2; i-- {
		switch p := c.Points[i]; {
		case p.Rejected > 0:
			first, idle = i, 0
		case p.Acquired+p.Errors > 0:
			idle = 3
		default:
			idle++
		}
	}
	return "Rejecting since " + chartClock(c.Points[first].T, c.Span) + " UTC."
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
	// WorkedTo is when the holder was last heard working past its hold's
	// end (a late release or renewal); zero when it was not.
	WorkedTo time.Time
	Running  bool
	Ended    string // released, handed-off, expired, force-unlocked, evicted
	// Shared: a read-write lock's reader, whose hold other readers share.
	Shared bool
	Color  int
}

// Lived is when h's holder last worked under it: past its end when it
// was heard late.
func (h TimelineHold) Lived() time.Time {
	if h.WorkedTo.After(h.To) {
		return h.WorkedTo
	}
	return h.To
}

// Overlaps says a and b were held by two holders at once, exclusion
// broken: readers together share a read-write lock by design.
func (h TimelineHold) Overlaps(b TimelineHold) bool {
	return h.Holder != b.Holder && !(h.Shared && b.Shared) && h.From.Before(b.Lived()) && b.From.Before(h.Lived())
}

// TimelineClient is one colour of the strip: a client (app@host pid), or
// the holder id when it registered none.
type TimelineClient struct {
	Label string
	Color int
}

// TimelineColors is how many client colours app.css defines (tl-c0...);
// static/charts.js reads them from there in the same order.
const TimelineColors = 8

// DataURL is the history API the timeline is drawn from.
func (t LockTimeline) DataURL() string { return "/api" + LockURL(t.Name) + "/history?span=" + t.Span }

func (t LockTimeline) summaryID() string { return chartID("lock-summary", t.Name, t.Span) }

func clientClass(c TimelineClient) string {
	return "tl-key tl-c" + strconv.Itoa(c.Color%TimelineColors)
}

// Summary says who held the lock over the span, who holds it now, how
// many holds ended without their holder's release, and how long
// acquisitions waited.
func (t LockTimeline) Summary() string {
	var b strings.Builder
	if len(t.Holds) == 0 {
		b.WriteString(spanWords(t.Span) + ": no holds recorded.")
	} else {
		fmt.Fprintf(&b, "%s: %s by %s.", spanWords(t.Span), plural(len(t.Holds), "hold", "holds"),
			plural(len(t.Clients), "client", "clients"))
		for _, h := range t.Holds {
			if h.Running {
				fmt.Fprintf(&b, " Held now by %s since %s UTC.", h.Client, chartClock(h.From, t.Span))
			}
		}
		if last := t.Holds[0]; !last.Running { // ended holds come newest first
			fmt.Fprintf(&b, " Free since %s UTC, last held by %s (%s).", chartClock(last.To, t.Span), last.Client, last.Ended)
		}
		broken := map[string]int{}
		for _, h := range t.Holds {
			if h.Ended == "expired" || h.Ended == "force-unlocked" || h.Ended == "evicted" {
				broken[h.Ended]++
			}
		}
		overlaps := 0
		for i, a := range t.Holds {
			for _, b := range t.Holds[i+1:] {
				if a.Overlaps(b) {
					overlaps++
				}
			}
		}
		if overlaps > 0 {
			fmt.Fprintf(&b, " %s: two holders at once.", plural(overlaps, "overlap", "overlaps"))
		}
		if n := broken["expired"] + broken["force-unlocked"] + broken["evicted"]; n > 0 {
			fmt.Fprintf(&b, " %s without a release (%d expired, %d force-unlocked", plural(n, "hold ended", "holds ended"),
				broken["expired"], broken["force-unlocked"])
			if e := broken["evicted"]; e > 0 {
				fmt.Fprintf(&b, ", %d evicted", e)
			}
			b.WriteString(").")
		}
	}
	if s := t.Waits.summary(t.Span); s != "" {
		b.WriteString(" " + s)
	}
	return b.String()
}

// plural is "1 hold", "3 holds".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return words.Count(int64(n)) + " " + many
}

// WhatIf is the what-if of the edit form: the last hour's demand at the
// typed rate and interval, beside what happened.
type WhatIf struct {
	Rate, IntervalMS string // as typed
	// Rule says them in the kind's words (ProposedRule): a token bucket's
	// capacity and refill with the rate they make.
	Rule string
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

// whatIfPointJSON is a minute of the what-if as static/charts.js draws it.
type whatIfPointJSON struct {
	T              int64 `json:"t"` // Unix seconds
	Attempts       int64 `json:"attempts"`
	ActualAdmitted int64 `json:"actual_admitted"`
	ActualRejected int64 `json:"actual_rejected"`
	Admitted       int64 `json:"admitted"`
	Rejected       int64 `json:"rejected"`
	Low            int64 `json:"low"`
	High           int64 `json:"high"`
}

// pointsJSON is the minutes for the chart's data-points.
func (w WhatIf) pointsJSON() string {
	out := make([]whatIfPointJSON, 0, len(w.Points))
	for _, p := range w.Points {
		out = append(out, whatIfPointJSON{T: p.T.Unix(), Attempts: p.Attempts, ActualAdmitted: p.ActualAdmitted,
			ActualRejected: p.ActualRejected, Admitted: p.Admitted, Rejected: p.Rejected, Low: p.Low, High: p.High})
	}
	b, _ := json.Marshal(out) // plain ints: cannot fail
	return string(b)
}

// Summary says what the chart shows: the rejections at these settings
// beside those that happened, and the worst minute of each.
func (w WhatIf) Summary() string {
	var worst, worstActual WhatIfPoint
	for _, p := range w.Points {
		if p.Rejected > worst.Rejected {
			worst = p
		}
		if p.ActualRejected > worstActual.ActualRejected {
			worstActual = p
		}
	}
	s := fmt.Sprintf("At these settings the last hour's demand gives %s rejections (could be %s to %s); %s happened.",
		words.Count(w.PredictedRejected), words.Count(w.PredictedLow), words.Count(w.PredictedHigh), words.Count(w.ActualRejected))
	if worst.Rejected > 0 {
		s += fmt.Sprintf(" The worst minute would be %s UTC with %s.", chartClock(worst.T, SpanDay), words.Count(worst.Rejected))
	} else {
		s += " No minute would reject."
	}
	if worstActual.ActualRejected > 0 {
		s += fmt.Sprintf(" The worst that happened: %s UTC with %s.", chartClock(worstActual.T, SpanDay), words.Count(worstActual.ActualRejected))
	}
	return s
}

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
