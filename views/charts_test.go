package views

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// hourChart is an hour of 10 s steps ending at `at`, with attempts in
// steps 10 and 300 and an audited change half-way.
func hourChart() LimiterChart {
	from := at.Truncate(10 * time.Second).Add(-time.Hour)
	c := LimiterChart{Name: "api", Span: SpanHour, StepS: 10, From: from, To: from.Add(time.Hour), Kept: true}
	for i := range 360 {
		p := HistoryPoint{T: from.Add(time.Duration(i) * 10 * time.Second)}
		switch i {
		case 10:
			p.Acquired, p.Rejected = 40, 2
		case 300:
			p.Acquired, p.Errors = 7, 1
		}
		c.Points = append(c.Points, p)
	}
	c.Markers = []ChartMarker{{T: from.Add(30 * time.Minute), Label: "admin: rate 5 → 7", Detail: "modify by admin: rate=5 → rate=7"}}
	return c
}

// The chart's frame names the history it is drawn from, and says in
// words what the chart shows: totals, the busiest step, since when it
// rejects, and the change, labelled with who changed what.
func TestViewHistoryChart(t *testing.T) {
	c := hourChart()
	doc := render(t, historyChart(c))
	fig := one(t, doc.Selection, "history-chart")
	if attr(t, fig, "data-span") != SpanHour {
		t.Errorf("data-span = %q", attr(t, fig, "data-span"))
	}
	plot := one(t, fig, "chart-plot")
	if src := attr(t, plot, "data-src"); src != "/api/limiters/api/history?span=1h" || attr(t, plot, "data-chart") != "limiter" ||
		attr(t, plot, "data-step-s") != "10" {
		t.Errorf("plot data-src %q data-chart %q data-step-s %q", src, attr(t, plot, "data-chart"), attr(t, plot, "data-step-s"))
	}
	sum := one(t, fig, "chart-summary")
	if attr(t, plot, "aria-describedby") != attr(t, sum, "id") || attr(t, sum, "id") == "" {
		t.Errorf("the plot is not described by its summary: %q, %q", attr(t, plot, "aria-describedby"), attr(t, sum, "id"))
	}
	from := c.From
	want := "Last hour: 47 acquired, 2 rejected (4.0 %), 1 errors. Busiest 10 s: " + from.Add(100*time.Second).Format("15:04:05") +
		" UTC, 4.2 attempts per second. Last rejection " + from.Add(100*time.Second).Format("15:04:05") +
		" UTC. 1 change: " + from.Add(30*time.Minute).Format("15:04:05") + " UTC, admin: rate 5 → 7."
	if got := sum.Text(); got != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}
	legend := one(t, fig, "chart-legend").Text()
	for _, w := range []string{"acquired", "rejected", "errors", "settings changed", "per second"} {
		if !strings.Contains(legend, w) {
			t.Errorf("legend %q lacks %q", legend, w)
		}
	}
	// Hidden rejections are not shown as zero.
	c.RejectionsHidden = true
	doc = render(t, historyChart(c))
	if s := text(t, doc.Selection, "chart-summary"); !strings.Contains(s, "rejections not visible") || strings.Contains(s, "2 rejected") {
		t.Errorf("hidden rejections: summary %q", s)
	}
	if l := text(t, doc.Selection, "chart-legend"); !strings.Contains(l, "not visible") {
		t.Errorf("hidden rejections: legend %q", l)
	}
	c.Points, c.Kept = nil, false
	one(t, render(t, historyChart(c)).Selection, "history-empty")
	one(t, render(t, historyChart(LimiterChart{Off: true})).Selection, "history-off")
}

// A limiter still rejecting at its last attempts says since when: the
// start of its run of rejecting steps, idle steps inside the run included.
func TestViewHistoryChartRejectingSince(t *testing.T) {
	from := at.Truncate(time.Minute).Add(-24 * time.Hour)
	c := LimiterChart{Name: "api", Span: SpanDay, StepS: 60, Kept: true}
	for i := range 1440 {
		p := HistoryPoint{T: from.Add(time.Duration(i) * time.Minute)}
		switch {
		case i == 100:
			p.Acquired, p.Rejected = 5, 1 // an earlier run
		case i >= 1000 && i < 1400 && i%3 != 0:
			p.Acquired, p.Rejected = 9, 4
		}
		c.Points = append(c.Points, p)
	}
	got := c.Summary()
	if want := "Rejecting since " + from.Add(1000*time.Minute).Format("15:04") + " UTC."; !strings.Contains(got, want) {
		t.Errorf("summary %q lacks %q", got, want)
	}
	c.Points[1001].Rejected = 0 // admitted all it was asked: the run starts after it (1002 is idle)
	if want := "Rejecting since " + from.Add(1003*time.Minute).Format("15:04") + " UTC."; !strings.Contains(c.Summary(), want) {
		t.Errorf("summary %q lacks %q", c.Summary(), want)
	}
}

// The timeline's frame names the lock's history, keys each client's colour,
// and says who held the lock, who holds it now, and what ended badly.
func TestViewLockTimeline(t *testing.T) {
	to := at
	from := to.Add(-time.Hour)
	tl := LockTimeline{Name: "jobs/nightly", Span: SpanHour, From: from, To: to, Kept: true,
		Clients: []TimelineClient{{Label: "orders@h1 pid 7", Color: 0}, {Label: "billing@h2 pid 9", Color: 1}},
		Holds: []TimelineHold{
			{Holder: "u1:t1", Client: "orders@h1 pid 7", From: to.Add(-15 * time.Minute), To: to, Running: true, Color: 0},
			{Holder: "u2:t2", Client: "billing@h2 pid 9", From: from.Add(15 * time.Minute), To: from.Add(30 * time.Minute), Ended: "force-unlocked", Color: 1},
			{Holder: "u1:t3", Client: "orders@h1 pid 7", From: from, To: from.Add(15 * time.Minute), Ended: "handed-off", Color: 0},
		}}
	root := one(t, render(t, lockTimeline(tl)).Selection, "lock-timeline")
	plot := one(t, root, "chart-plot")
	if src := attr(t, plot, "data-src"); src != "/api/locks/jobs%2Fnightly/history?span=1h" || attr(t, plot, "data-chart") != "lock" {
		t.Errorf("plot data-src %q data-chart %q", src, attr(t, plot, "data-chart"))
	}
	keys := root.Find(tid("timeline-client"))
	if keys.Length() != 2 || !strings.Contains(attr(t, keys.Eq(1).Find("span"), "class"), "tl-c1") {
		t.Errorf("%d clients in the key; the second's swatch %q", keys.Length(), keys.Eq(1).Find("span").AttrOr("class", ""))
	}
	want := "Last hour: 3 holds by 2 clients. Held now by orders@h1 pid 7 since " + to.Add(-15*time.Minute).Format("15:04:05") +
		" UTC. 1 hold ended without a release (0 expired, 1 force-unlocked)."
	if got := text(t, root, "chart-summary"); got != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}
	tl.Holds = tl.Holds[1:]
	if got := text(t, render(t, lockTimeline(tl)).Selection, "chart-summary"); !strings.Contains(got,
		" Free since "+from.Add(30*time.Minute).Format("15:04:05")+" UTC, last held by billing@h2 pid 9 (force-unlocked).") {
		t.Errorf("summary of a free lock %q, want since when and who held it last", got)
	}
	tl.Holds = nil
	one(t, render(t, lockTimeline(tl)).Selection, "timeline-empty")
}

// Overlap is two holders at once of an exclusive hold: readers of a
// read-write lock share it, a writer with a reader does not, and a holder
// heard working past its expiry overlaps whoever took the lock after.
func TestViewLockTimelineOverlaps(t *testing.T) {
	from := at.Add(-time.Hour)
	read := func(holder string, a, b int) TimelineHold {
		return TimelineHold{Holder: holder, From: from.Add(time.Duration(a) * time.Minute),
			To: from.Add(time.Duration(b) * time.Minute), Ended: "released", Shared: true}
	}
	write := read("w", 5, 8)
	write.Shared = false
	cases := []struct {
		a, b TimelineHold
		want bool
	}{
		{read("r1", 0, 10), read("r2", 2, 12), false},
		{read("r1", 0, 10), write, true},
		{write, read("r2", 7, 9), true},
		{read("r1", 0, 4), write, false},
	}
	late := TimelineHold{Holder: "a", From: from, To: from.Add(time.Minute), WorkedTo: from.Add(3 * time.Minute), Ended: "expired"}
	next := TimelineHold{Holder: "b", From: from.Add(2 * time.Minute), To: from.Add(4 * time.Minute), Ended: "released"}
	cases = append(cases, struct {
		a, b TimelineHold
		want bool
	}{late, next, true})
	for i, c := range cases {
		if got := c.a.Overlaps(c.b); got != c.want {
			t.Errorf("case %d: %s %v-%v with %s %v-%v: overlap %v, want %v", i, c.a.Holder, c.a.From, c.a.Lived(),
				c.b.Holder, c.b.From, c.b.Lived(), got, c.want)
		}
	}
	tl := LockTimeline{Name: "catalog", Span: SpanHour, From: from, To: at, Holds: []TimelineHold{read("r1", 0, 10), read("r2", 2, 12)}}
	if s := tl.Summary(); strings.Contains(s, "overlap") {
		t.Errorf("summary %q: readers counted as overlapping", s)
	}
	tl.Holds = []TimelineHold{next, late}
	if s := tl.Summary(); !strings.Contains(s, "1 overlap: two holders at once.") {
		t.Errorf("summary %q: want the expired holder's late work over the next hold", s)
	}
}

func TestViewWhatIfResult(t *testing.T) {
	w := WhatIf{Rate: "5", IntervalMS: "100", SpanS: 600, FineS: 180, Attempts: 90, ActualAdmitted: 80, ActualRejected: 10,
		PredictedAdmitted: 50, PredictedRejected: 40, PredictedLow: 35, PredictedHigh: 48, LowerBound: true,
		Check:  &WhatIfCheck{Recorded: 10, Replayed: 10, Trusted: true},
		Points: []WhatIfPoint{{T: at, Attempts: 90, ActualAdmitted: 80, ActualRejected: 10, Admitted: 50, Rejected: 40, Low: 35, High: 48}}}
	doc := render(t, whatIfResult(w))
	if got := text(t, doc.Selection, "whatif-rejected"); got != "40" {
		t.Errorf("predicted rejected %q, want 40", got)
	}
	if got := text(t, doc.Selection, "whatif-band"); got != "35 to 48" {
		t.Errorf("band %q, want 35 to 48", got)
	}
	if got := text(t, doc.Selection, "whatif-check"); !strings.Contains(got, "10 rejections; 10 were recorded (+0.0 %)") {
		t.Errorf("check %q", got)
	}
	if doc.Find(tid("whatif-untrusted")).Length()+doc.Find(tid("whatif-unchecked")).Length() != 0 {
		t.Error("a warning over a replay that reproduced today's rejections")
	}
	one(t, doc.Selection, "whatif-lower-bound")
	// The chart's minutes are on the page, and its summary says them.
	var pts []map[string]int64
	if err := json.Unmarshal([]byte(attr(t, one(t, doc.Selection, "chart-plot"), "data-points")), &pts); err != nil || len(pts) != 1 ||
		pts[0]["t"] != at.Unix() || pts[0]["actual_rejected"] != 10 || pts[0]["rejected"] != 40 || pts[0]["low"] != 35 || pts[0]["high"] != 48 {
		t.Errorf("data-points %v (%v)", pts, err)
	}
	if got, want := text(t, doc.Selection, "chart-summary"), "At these settings the last hour's demand gives 40 rejections (could be 35 to 48); 10 happened. The worst minute would be "+
		at.Format("15:04")+" UTC with 40. The worst that happened: "+at.Format("15:04")+" UTC with 10."; got != want {
		t.Errorf("summary\n%s\nwant\n%s", got, want)
	}

	// An error at today's settings over 2 %: the warning comes before the
	// numbers.
	w.Check = &WhatIfCheck{Recorded: 100, Replayed: 93, ErrorPct: -7}
	doc = render(t, whatIfResult(w))
	warn := doc.Find(tid("whatif-untrusted"))
	if warn.Length() != 1 || !strings.Contains(warn.Text(), "93 rejections; 100 were recorded (-7.0 %)") {
		t.Fatalf("warning %q", warn.Text())
	}
	if warn.Nodes[0].Parent != doc.Find(tid("whatif-predicted")).Closest("section").Nodes[0] || warn.NextAllFiltered("table").Length() != 1 {
		t.Error("the warning is not above the numbers")
	}
	w.Check = nil
	one(t, render(t, whatIfResult(w)).Selection, "whatif-unchecked")

	w.Attempts, w.LowerBound = 0, false
	doc = render(t, whatIfResult(w))
	one(t, doc.Selection, "whatif-empty")
	if doc.Find(tid("whatif-lower-bound")).Length() != 0 {
		t.Error("lower-bound notice without a lower bound")
	}
}
