package views

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
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
	c.Markers = []ChartMarker{{T: from.Add(30 * time.Minute), Label: "modify by admin: rate=5 → rate=7"}}
	return c
}

func TestViewHistoryChart(t *testing.T) {
	c := hourChart()
	doc := render(t, historyChart(c))
	fig := one(t, doc.Selection, "history-chart")
	if attr(t, fig, "data-span") != SpanHour {
		t.Errorf("data-span = %q", attr(t, fig, "data-span"))
	}
	bars := fig.Find(tid("chart-bar"))
	if bars.Length() != 2 {
		t.Fatalf("%d bars, want one per step with attempts (2)", bars.Length())
	}
	first := strings.TrimSpace(bars.First().Find("title").Text())
	if !strings.Contains(first, "40 acquired, 2 rejected, 0 errors") {
		t.Errorf("first bar's title %q lacks its exact values", first)
	}
	// 360 steps over 720 units: a bar is 2 wide, step 10 starts at x=20.
	if x := attr(t, bars.First().Find("rect.bar-acquired"), "x"); x != "20.0" {
		t.Errorf("first bar at x=%s, want 20.0", x)
	}
	if bars.Eq(1).Find("rect.bar-errors").Length() != 1 || bars.Eq(1).Find("rect.bar-rejected").Length() != 0 {
		t.Errorf("second bar: want an errors rect and no rejected one")
	}
	mk := one(t, fig, "chart-marker")
	if x := attr(t, mk.Find("line"), "x1"); x != "360.0" {
		t.Errorf("marker at x=%s, want 360.0 (half-way)", x)
	}
	if title := mk.Find("title").Text(); !strings.Contains(title, "rate=5 → rate=7") {
		t.Errorf("marker title %q", title)
	}
	// Hidden rejections are not shown as zero.
	c.RejectionsHidden = true
	doc = render(t, historyChart(c))
	if title := doc.Find(tid("chart-bar")).First().Find("title").Text(); !strings.Contains(title, "rejected not visible") {
		t.Errorf("hidden rejections: title %q", title)
	}
}

// A day of minutes is drawn as at most chartMaxBars bars whose titles add
// up the steps they hold; the overview's thumbnail as fewer.
func TestViewHistoryChartGroupsSteps(t *testing.T) {
	from := at.Truncate(time.Minute).Add(-24 * time.Hour)
	c := LimiterChart{Name: "api", Span: SpanDay, StepS: 60, From: from, To: from.Add(24 * time.Hour), Kept: true}
	var want int64
	for i := range 1440 {
		c.Points = append(c.Points, HistoryPoint{T: from.Add(time.Duration(i) * time.Minute), Acquired: int64(i % 7)})
		want += int64(i % 7)
	}
	for _, small := range []bool{false, true} {
		c.Small = small
		doc := render(t, historyChart(c))
		bars := doc.Find(tid("chart-bar"))
		limit := chartMaxBars
		if small {
			limit = thumbMaxBars
		}
		if bars.Length() == 0 || bars.Length() > limit {
			t.Fatalf("small=%v: %d bars, want 1..%d", small, bars.Length(), limit)
		}
		var sum int64
		bars.Each(func(_ int, b *goquery.Selection) {
			title := b.Find("title").Text()
			n, err := strconv.ParseInt(strings.Fields(strings.SplitN(title, "UTC: ", 2)[1])[0], 10, 64)
			if err != nil {
				t.Fatalf("title %q: %v", title, err)
			}
			sum += n
		})
		if sum != want {
			t.Errorf("small=%v: the bars' titles add up to %d acquired, want %d", small, sum, want)
		}
	}
	c.Points, c.Kept, c.Small = nil, false, false
	one(t, render(t, historyChart(c)).Selection, "history-empty")
	one(t, render(t, historyChart(LimiterChart{Off: true})).Selection, "history-off")
}

func TestViewLockTimeline(t *testing.T) {
	to := at
	from := to.Add(-time.Hour)
	tl := LockTimeline{Name: "job", Span: SpanHour, From: from, To: to, Kept: true,
		Clients: []TimelineClient{{Label: "orders@h1 pid 7", Color: 0}, {Label: "billing@h2 pid 9", Color: 1}},
		Holds: []TimelineHold{
			{Holder: "u1:t1", Client: "orders@h1 pid 7", From: to.Add(-15 * time.Minute), To: to, Running: true, Color: 0},
			{Holder: "u2:t2", Client: "billing@h2 pid 9", From: from.Add(15 * time.Minute), To: from.Add(30 * time.Minute), Ended: "force-unlocked", Color: 1},
			{Holder: "u1:t3", Client: "orders@h1 pid 7", From: from, To: from.Add(15 * time.Minute), Ended: "handed-off", Color: 0},
		}}
	doc := render(t, lockTimeline(tl))
	root := one(t, doc.Selection, "lock-timeline")
	holds := root.Find(tid("timeline-hold"))
	if holds.Length() != 3 {
		t.Fatalf("%d holds, want 3", holds.Length())
	}
	want := []struct{ x, w, color string }{{"540.0", "180.0", "tl-c0"}, {"180.0", "180.0", "tl-c1"}, {"0.0", "180.0", "tl-c0"}}
	holds.Each(func(i int, h *goquery.Selection) {
		if x, w, class := attr(t, h, "x"), attr(t, h, "width"), attr(t, h, "class"); x != want[i].x || w != want[i].w || !strings.Contains(class, want[i].color) {
			t.Errorf("hold %d: x=%s width=%s class %q, want x=%s width=%s %s", i, x, w, class, want[i].x, want[i].w, want[i].color)
		}
	})
	if c := attr(t, holds.Eq(1), "class"); !strings.Contains(c, "tl-broken") {
		t.Errorf("a force-unlocked hold is not marked: %q", c)
	}
	if title := holds.Eq(1).Find("title").Text(); !strings.Contains(title, "u2:t2 (billing@h2 pid 9)") || !strings.Contains(title, "force-unlocked") {
		t.Errorf("title %q", title)
	}
	if n := root.Find(tid("timeline-client")).Length(); n != 2 {
		t.Errorf("%d clients in the key, want 2", n)
	}
	tl.Holds = nil
	one(t, render(t, lockTimeline(tl)).Selection, "timeline-empty")
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
	if n := doc.Find(tid("whatif-bar")).Length(); n != 1 {
		t.Errorf("%d bars, want 1", n)
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
