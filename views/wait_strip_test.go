package views

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

// The lock's timeline draws its waits beneath the holders: one bar per
// minute, as high as its contended acquisitions, coloured by p99, with the
// exact values in its <title>.
func TestViewLockTimelineWaits(t *testing.T) {
	to := at.Truncate(time.Minute)
	from := to.Add(-time.Hour)
	tl := LockTimeline{Name: "job", Span: SpanHour, From: from, To: to, Kept: true,
		Clients: []TimelineClient{{Label: "orders@h1 pid 7"}},
		Holds:   []TimelineHold{{Holder: "u1:t1", Client: "orders@h1 pid 7", From: from, To: to, Running: true}},
		Waits: WaitStrip{Name: "job", From: from, To: to, Minutes: []WaitMinute{
			{T: from, Acquired: 10, Contended: 4, P50MS: 3, P99MS: 30, MaxMS: 27},
			{T: from.Add(30 * time.Minute), Acquired: 20, Contended: 8, P50MS: 300, P99MS: 3000, MaxMS: 2500},
			{T: to.Add(-time.Minute), Acquired: 5},
		}}}
	root := one(t, render(t, lockTimeline(tl)).Selection, "lock-timeline")
	strip := one(t, root, "timeline-waits")
	if strip.Find(tid("timeline-hold")).Length() != 0 || root.Find(tid("timeline-hold")).Length() != 1 {
		t.Fatal("the waits strip is not a strip of its own beneath the holders")
	}
	bars := strip.Find(tid("timeline-wait"))
	if bars.Length() != 3 {
		t.Fatalf("%d wait bars, want one per minute with acquisitions", bars.Length())
	}
	want := []struct{ x, h, class, title string }{
		{"0.0", "14.0", "wait-ok", "Mar 4 04:06 UTC: 10 acquired, 4 contended, p50 3 ms, p99 30 ms, max 27 ms"},
		{"360.0", "28.0", "wait-bad", "Mar 4 04:36 UTC: 20 acquired, 8 contended, p50 300 ms, p99 3000 ms, max 2500 ms"},
		{"708.0", "1.0", "wait-none", "Mar 4 05:05 UTC: 5 acquired, 0 contended, p50 0 ms, p99 0 ms, max 0 ms"},
	}
	bars.Each(func(i int, b *goquery.Selection) {
		w := want[i]
		if x, h, c, title := attr(t, b, "x"), attr(t, b, "height"), attr(t, b, "class"), b.Find("title").Text(); x != w.x || h != w.h || c != w.class || title != w.title {
			t.Errorf("bar %d: x=%s height=%s class %q title %q, want %s %s %q %q", i, x, h, c, title, w.x, w.h, w.class, w.title)
		}
	})
	tl.Waits.Minutes = nil
	if render(t, lockTimeline(tl)).Find(tid("timeline-waits")).Length() != 0 {
		t.Error("a strip drawn without waits")
	}
}

// The overview shows the most contended locks' last 24 h beside the
// busiest limiters, each linking to its lock's 24 h timeline; a day of
// minutes is grouped into at most thumbMaxBars bars whose titles add up.
func TestViewOverviewLockCharts(t *testing.T) {
	to := at.Truncate(time.Minute)
	from := to.Add(-24 * time.Hour)
	day := WaitStrip{Name: "orders:checkout", From: from, To: to, Small: true}
	var contended int64
	for i := range 1440 {
		day.Minutes = append(day.Minutes, WaitMinute{T: from.Add(time.Duration(i) * time.Minute), Acquired: 9, Contended: int64(i % 5), P99MS: 10, MaxMS: 9})
		contended += int64(i % 5)
	}
	quiet := WaitStrip{Name: "jobs/nightly", From: from, To: to, Small: true,
		Minutes: []WaitMinute{{T: from.Add(time.Hour), Acquired: 2, Contended: 1, P50MS: 1, P99MS: 1, MaxMS: 1}}}
	doc := render(t, Overview(OverviewPage{Layout: layout(NavOverview), LockCharts: []WaitStrip{day, quiet}}))
	charts := one(t, doc.Selection, "overview-lock-charts").Find(tid("overview-lock-chart"))
	if charts.Length() != 2 || attr(t, charts.Eq(1), "href") != "/locks/jobs%2Fnightly?span=24h" ||
		!strings.Contains(charts.Eq(0).Text(), "orders:checkout") {
		t.Fatalf("%d lock charts; second links to %q", charts.Length(), attr(t, charts.Eq(1), "href"))
	}
	bars := charts.Eq(0).Find(tid("timeline-wait"))
	if bars.Length() == 0 || bars.Length() > thumbMaxBars {
		t.Fatalf("%d bars for a day, want 1..%d", bars.Length(), thumbMaxBars)
	}
	var sum int64
	bars.Each(func(_ int, b *goquery.Selection) {
		var n int64
		for _, f := range strings.Split(b.Find("title").Text(), ", ") {
			if c, ok := strings.CutSuffix(f, " contended"); ok {
				v, err := strconv.ParseInt(strings.Fields(c)[len(strings.Fields(c))-1], 10, 64)
				if err != nil {
					t.Fatalf("title %q: %v", b.Find("title").Text(), err)
				}
				n = v
			}
		}
		if attr(t, b, "data-contended") != itoa(n) {
			t.Errorf("bar title %q and data-contended %s differ", b.Find("title").Text(), attr(t, b, "data-contended"))
		}
		sum += n
	})
	if sum != contended {
		t.Errorf("the bars' titles add up to %d contended, want %d", sum, contended)
	}
	if render(t, Overview(OverviewPage{Layout: layout(NavOverview)})).Find(tid("overview-lock-charts")).Length() != 0 {
		t.Error("a lock charts section without locks")
	}
}
