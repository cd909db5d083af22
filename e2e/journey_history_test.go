package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// reopenUntil reloads path until sel matches at least n elements: the
// history is written once per 10 s step, and pages read what was written.
func (j *journey) reopenUntil(what, path, sel string, n int) {
	j.t.Helper()
	redistest.EventuallyWithin(j.t, 30*time.Second, what, func() bool {
		j.open(path)
		return j.count(sel) >= n
	})
}

// chartJSON is what static/charts.js drew in the chart plot sel (its
// LW.chartOf state): the points it was given, the axes' tick labels and
// unit, the change markers it labelled (with their boxes), and how many
// times it drew.
type chartJSON struct {
	Draws  int      `json:"draws"`
	XTicks []string `json:"xTicks"`
	YTicks []string `json:"yTicks"`
	YLabel string   `json:"yLabel"`
	// Points: a limiter's {t, acq, rej, err, step}, a lock's {holds,
	// clients, wait}.
	Points  json.RawMessage `json:"points"`
	Markers []struct {
		Label             string
		X, Y, W, H, LineX float64
	} `json:"markers"`
}

func (j *journey) chart(sel string) chartJSON {
	j.t.Helper()
	v, err := j.tab.Locator(sel).First().Evaluate(`el => JSON.stringify(window.lockwarden.chartOf(el))`, nil)
	if err != nil {
		j.t.Fatalf("chart %s: %v", sel, err)
	}
	var c chartJSON
	if s, _ := v.(string); s == "" || json.Unmarshal([]byte(s), &c) != nil {
		j.t.Fatalf("chart %s: state %v", sel, v)
	}
	return c
}

// limiterPoints are the counts a limiter chart was drawn from.
type limiterPoints struct {
	T, Acq, Rej, Err []int64
	Step             int64
}

func (c chartJSON) limiter(t *testing.T) (p limiterPoints, acq, rej int64) {
	t.Helper()
	if len(c.Points) == 0 || json.Unmarshal(c.Points, &p) != nil {
		return p, -1, -1
	}
	for i := range p.Acq {
		acq, rej = acq+p.Acq[i], rej+p.Rej[i]
	}
	return p, acq, rej
}

const drawnJS = `([sel, n]) => { const el = document.querySelector(sel); return !!el && Number(el.dataset.drawn) >= n; }`

// drawnChart waits until the chart in sel drew at least n times, and
// returns what it drew.
func (j *journey) drawnChart(sel string, n int, timeout time.Duration) chartJSON {
	j.t.Helper()
	j.waitJS("the chart "+sel+" drawn", drawnJS, []any{sel, n}, timeout)
	return j.chart(sel)
}

// drewChart is drawnChart for a page that may have no such chart yet:
// false when it has none, or it did not draw within 5 s.
func (j *journey) drewChart(sel string) (chartJSON, bool) {
	j.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if v, err := j.tab.Evaluate(drawnJS, []any{sel, 1}); err == nil && v == true {
			return j.chart(sel), true
		}
	}
	return chartJSON{}, false
}

var clockTick = regexp.MustCompile(`^\d\d:\d\d(:\d\d)?(\n[A-Z][a-z]{2} \d+)?$`)

// Journey: what happened, and what if. Traffic on a limiter shows on its
// hour chart, with clock and per-second axes; a rate edit puts a marker
// labelled with who changed what on the chart, and hovering it says all
// of it; the chart draws again after the next flush while the page is
// live. The edit form's "What if?" replays the hour at the typed rate
// beside what happened, changing nothing; the day's chart and the
// overview show the same traffic; a held lock is a bar in its client's
// lane on its timeline, and a contended one has its waits beneath.
func TestJourneyHistory(t *testing.T) {
	j := newJourney(t)
	const name, lock = "orders:api", "orders:lock"
	j.bucket(name, 5, 200) // 5 permits, 5/s
	j.holdLock(store.New(j.rdb, nil), lock, "worker-1")
	j.open("/limiters") // waits until the console lists the bucket
	traffic := j.limiterLoad(name, 2, 50*time.Millisecond)
	redistest.EventuallyWithin(t, 10*time.Second, "rejections", func() bool { return traffic.rejected.Load() > 20 })
	traffic.stop()
	acq, rej := traffic.acquired.Load(), traffic.rejected.Load()

	// The hour: the chart is drawn from points that add up to the attempts.
	page := "/limiters/" + name
	plot := `[data-testid=history-chart] [data-testid=chart-plot]`
	var gotAcq, gotRej int64
	redistest.EventuallyWithin(t, 30*time.Second, "the traffic on the hour chart", func() bool {
		j.open(page)
		c, ok := j.drewChart(plot)
		_, gotAcq, gotRej = c.limiter(t)
		return ok && gotAcq == acq && gotRej == rej
	})
	if span, _ := j.tab.Locator(`[data-testid=history-chart]`).GetAttribute("data-span"); span != "1h" {
		t.Errorf("the limiter page's chart spans %q, want 1h", span)
	}
	c := j.chart(plot)
	if len(c.XTicks) < 3 || !clockTick.MatchString(c.XTicks[0]) || c.YLabel != "attempts per second" || len(c.YTicks) < 2 {
		t.Errorf("axes: time %q, value %q %q; want UTC clocks and attempts per second", c.XTicks, c.YLabel, c.YTicks)
	}
	if s := j.text(`[data-testid=history-chart] [data-testid=chart-summary]`); !strings.Contains(s, fmt.Sprintf("%d acquired, %d rejected", acq, rej)) {
		t.Errorf("summary %q lacks the hour's totals", s)
	}

	// A rate edit is a labelled marker on the chart.
	j.fill(`[data-testid=input-rate]`, "8")
	j.fill(`[data-testid=input-interval_ms]`, "200")
	j.fill(`[data-testid=input-reason]`, "e2e: slower")
	j.clickTo(`[data-testid=limiter-save]`)
	j.clickTo(`[data-testid=limiter-confirm]`)
	redistest.EventuallyWithin(t, 30*time.Second, "a marker at the edit", func() bool {
		j.open(page)
		c, ok := j.drewChart(plot)
		return ok && len(c.Markers) == 1
	})
	c = j.chart(plot)
	m := c.Markers[0]
	if !strings.Contains(m.Label, "admin: rate 5 → 8") || m.W < 50 || m.H < 10 {
		t.Errorf("marker %+v, want it labelled admin: rate 5 → 8", m)
	}
	// Hovering its line shows the whole audit record (the plot in view
	// first: the mouse moves in the viewport).
	if err := j.tab.Locator(plot).ScrollIntoViewIfNeeded(); err != nil {
		t.Fatal(err)
	}
	box, err := j.tab.Locator(plot + ` .u-over`).BoundingBox()
	if err != nil || box == nil {
		t.Fatalf("plot area: %v", err)
	}
	lineX := m.LineX
	if canvas, _ := j.tab.Locator(plot + ` canvas`).BoundingBox(); canvas != nil {
		lineX += canvas.X
	}
	if err := j.tab.Mouse().Move(lineX, box.Y+box.Height*0.7); err != nil {
		t.Fatal(err)
	}
	tip := j.waitText("the marker's tooltip", plot+` [data-testid=chart-tip]`, 5*time.Second, func(s string) bool {
		return strings.Contains(s, "rate=8")
	})
	if !strings.Contains(tip, "modify by admin") {
		t.Errorf("tooltip %q does not say who changed it", tip)
	}
	// While the page is live the chart follows the history's flushes.
	drawn := c.Draws
	j.drawnChart(plot, drawn+1, 25*time.Second)

	// What if one permit a day: one attempt admitted, the rest rejected.
	before := j.hgetall(name)
	j.fill(`[data-testid=input-rate]`, "1")
	j.fill(`[data-testid=input-interval_ms]`, "86400000")
	j.clickTo(`[data-testid=whatif-run]`)
	if got := j.text(`[data-testid=whatif-result] [data-testid=whatif-admitted]`); got != "1" {
		t.Errorf("what-if admitted %q, want 1", got)
	}
	happened := j.allTexts(`[data-testid=whatif-actual] td`)
	if len(happened) != 2 || happened[0] != strconv.FormatInt(acq, 10) || happened[1] != strconv.FormatInt(rej, 10) {
		t.Errorf("what happened: %v, want %d admitted, %d rejected", happened, acq, rej)
	}
	if got := j.text(`[data-testid=whatif-rejected]`); got != strconv.FormatInt(acq+rej-1, 10) {
		t.Errorf("what-if rejected %q, want %d", got, acq+rej-1)
	}
	if after := j.hgetall(name); after["max_permits"] != before["max_permits"] || after["interval"] != before["interval"] {
		t.Errorf("the what-if changed the bucket: %v -> %v", before, after)
	}
	if v, _ := j.tab.Locator(`[data-testid=input-rate]`).InputValue(); v != "1" {
		t.Errorf("the typed rate came back as %q", v)
	}
	// Its chart: the minutes, on a clock axis, in rejections per minute.
	if w := j.drawnChart(`[data-testid=whatif-result] [data-testid=chart-plot]`, 1, 5*time.Second); w.YLabel != "rejected per minute" ||
		len(w.XTicks) == 0 || !clockTick.MatchString(w.XTicks[0]) || len(w.Points) < 3 {
		t.Errorf("what-if chart: axes %q %q, points %s", w.XTicks, w.YLabel, w.Points)
	}

	// The day, per minute, holds the same attempts.
	j.clickTo(`[data-testid=span-24h]`)
	if span, _ := j.tab.Locator(`[data-testid=history-chart]`).GetAttribute("data-span"); span != "24h" {
		t.Errorf("after the 24 h link the chart spans %q", span)
	}
	if p, dayAcq, _ := j.drawnChart(plot, 1, 10*time.Second).limiter(t); dayAcq != acq || p.Step != 60 {
		t.Errorf("the day's chart holds %d acquired in %d s steps, the hour's %d", dayAcq, p.Step, acq)
	}
	j.open("/")
	thumb := `[data-testid=overview-chart] [data-testid=chart-plot]`
	if _, a, _ := j.drawnChart(thumb, 1, 10*time.Second).limiter(t); a != acq {
		t.Errorf("the overview's 24 h thumbnail holds %d acquired, want %d", a, acq)
	}

	// The lock's timeline: worker-1's running hold in its client's lane.
	var tl struct {
		Holds []struct {
			Lane    int
			Holder  string
			Running bool
		}
		Clients []string
		Wait    []struct{ Contended int64 }
	}
	timeline := `[data-testid=lock-timeline] [data-testid=chart-plot]`
	redistest.EventuallyWithin(t, 30*time.Second, "the hold on the lock's timeline", func() bool {
		j.open("/locks/" + lock)
		c, ok := j.drewChart(timeline)
		return ok && json.Unmarshal(c.Points, &tl) == nil && len(tl.Holds) == 1
	})
	if h := tl.Holds[0]; !strings.HasSuffix(h.Holder, ":worker-1") || !h.Running || h.Lane != 0 || len(tl.Clients) != 1 {
		t.Errorf("timeline holds %+v clients %q, want worker-1's running hold in the one lane", tl.Holds, tl.Clients)
	}
	if s := j.text(`[data-testid=lock-timeline] [data-testid=chart-summary]`); !strings.Contains(s, "Held now by") {
		t.Errorf("timeline summary %q, want who holds it now", s)
	}
	if j.count(`[data-testid=timeline-client]`) != 1 {
		t.Errorf("want one client in the timeline's key")
	}

	// A lock two applications contend for: its wait beneath the holders,
	// and the lock among the overview's most contended.
	const settle = "orders:settle"
	first := j.holdLock(store.New(j.rdb, nil), settle, "settler-1")
	second := store.New(j.rdb, nil).NewLock(settle, &store.LockOptions{Owner: "settler-2"})
	got := make(chan error, 1)
	go func() { got <- second.Lock(j.ctx) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(j.ctx), 2*time.Second)
		defer cancel()
		second.Unlock(ctx)
	})
	redistest.EventuallyWithin(t, 5*time.Second, "the second settler to queue", func() bool {
		return j.rdb.Exists(j.ctx, redistest.LockQueueKey(settle)).Val() == 1
	})
	if err := first.Unlock(j.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	redistest.EventuallyWithin(t, 30*time.Second, "the wait beneath the lock's holders", func() bool {
		j.open("/locks/" + settle)
		c, ok := j.drewChart(timeline)
		tl.Wait = nil
		if !ok || json.Unmarshal(c.Points, &tl) != nil {
			return false
		}
		for _, w := range tl.Wait {
			if w.Contended == 1 {
				return true
			}
		}
		return false
	})
	j.open("/")
	if got := j.allTexts(`[data-testid=overview-lock-chart] .thumb-name`); len(got) != 1 || got[0] != settle {
		t.Errorf("the overview's most contended locks: %v, want %s", got, settle)
	}
}
