package views

import (
	"strings"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/views/words"
)

// The lock's timeline says how long acquisitions waited, and keys the
// waits' colours; without waits it has neither.
func TestViewLockTimelineWaits(t *testing.T) {
	to := at.Truncate(time.Minute)
	from := to.Add(-time.Hour)
	tl := LockTimeline{Name: "job", Span: SpanHour, From: from, To: to, Kept: true,
		Clients: []TimelineClient{{Label: "orders@h1 pid 7"}},
		Holds:   []TimelineHold{{Holder: "u1:t1", Client: "orders@h1 pid 7", From: from, To: to, Running: true}},
		Waits: WaitStrip{Name: "job", From: from, To: to, Minutes: []WaitMinute{
			{T: from, Acquired: 10, Contended: 4, P50MS: 3, P99MS: 30, MaxMS: 27},
			{T: from.Add(30 * time.Minute), Acquired: 20, Contended: 8, P50MS: 300, P99MS: 61_500, MaxMS: 2500},
			{T: to.Add(-time.Minute), Acquired: 5},
		}}}
	root := one(t, render(t, lockTimeline(tl)).Selection, "lock-timeline")
	one(t, root, "wait-legend")
	want := "Waits: 12 of 35 acquisitions waited; the worst minute, " + from.Add(30*time.Minute).Format("15:04:05") + " UTC, had a p99 wait of 1 min 1 s."
	if got := text(t, root, "chart-summary"); !strings.HasSuffix(got, want) {
		t.Errorf("summary %q, want it to end %q", got, want)
	}
	tl.Waits.Minutes = nil
	root = render(t, lockTimeline(tl)).Selection
	if root.Find(tid("wait-legend")).Length() != 0 || strings.Contains(text(t, root, "chart-summary"), "Waits") {
		t.Error("waits shown without any")
	}
}

// The overview shows the most contended locks' last 24 h beside the
// busiest limiters, each linking to its lock's 24 h timeline and drawn
// from that lock's day.
func TestViewOverviewLockCharts(t *testing.T) {
	to := at.Truncate(time.Minute)
	from := to.Add(-24 * time.Hour)
	day := WaitStrip{Name: "orders:checkout", From: from, To: to, Small: true}
	var contended, acquired int64
	for i := range 1440 {
		day.Minutes = append(day.Minutes, WaitMinute{T: from.Add(time.Duration(i) * time.Minute), Acquired: 9, Contended: int64(i % 5), P99MS: 10, MaxMS: 9})
		contended, acquired = contended+int64(i%5), acquired+9
	}
	quiet := WaitStrip{Name: "jobs/nightly", From: from, To: to, Small: true,
		Minutes: []WaitMinute{{T: from.Add(time.Hour), Acquired: 2, Contended: 1, P50MS: 1, P99MS: 1, MaxMS: 1}}}
	doc := render(t, Overview(OverviewPage{Layout: layout(NavOverview), LockCharts: []WaitStrip{day, quiet}}))
	charts := one(t, doc.Selection, "overview-lock-charts").Find(tid("overview-lock-chart"))
	if charts.Length() != 2 || attr(t, charts.Eq(1), "href") != "/locks/jobs%2Fnightly?span=24h" ||
		!strings.Contains(charts.Eq(0).Text(), "orders:checkout") {
		t.Fatalf("%d lock charts; second links to %q", charts.Length(), attr(t, charts.Eq(1), "href"))
	}
	if src := attr(t, one(t, charts.Eq(1), "chart-plot"), "data-src"); src != "/api/locks/jobs%2Fnightly/history?span=24h" {
		t.Errorf("second thumbnail drawn from %q", src)
	}
	if attr(t, charts.Eq(0).Find(".thumb-name"), "title") != "orders:checkout" {
		t.Error("a thumbnail's name has no title with the whole name")
	}
	want := "Waits: " + words.Count(contended) + " of " + words.Count(acquired) + " acquisitions waited"
	if got := text(t, charts.Eq(0), "chart-summary"); !strings.HasPrefix(got, want) {
		t.Errorf("summary %q, want it to start %q", got, want)
	}
	if render(t, Overview(OverviewPage{Layout: layout(NavOverview)})).Find(tid("overview-lock-charts")).Length() != 0 {
		t.Error("a lock charts section without locks")
	}
}
