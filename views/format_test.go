package views

import (
	"strings"
	"testing"
	"time"
)

func TestViewSparkline(t *testing.T) {
	pts := make([]Counts, SparkPoints+5)
	for i := range pts {
		pts[i] = Counts{Acquired: int64(i), Rejected: 1}
	}
	doc := render(t, Limiters(LimitersPage{Layout: layout(NavLimiters), Limiters: []LimiterRow{{Name: "x", Spark: pts}}}))
	svg := one(t, doc.Selection, "sparkline")
	acq := strings.Split(attr(t, svg, "data-acquired"), ",")
	if len(acq) != SparkPoints || acq[0] != "5" || acq[len(acq)-1] != itoa(SparkPoints+4) {
		t.Errorf("data-acquired keeps the newest %d: %v", SparkPoints, acq)
	}
	line := svg.Find(`polyline[data-series="acquired"]`)
	points := strings.Fields(attr(t, line, "points"))
	if len(points) != SparkPoints {
		t.Fatalf("points %d", len(points))
	}
	// The newest, largest value sits at the right edge, top of the box.
	if points[len(points)-1] != "120.0,1.0" || !strings.HasPrefix(points[0], "0.0,") {
		t.Errorf("geometry %s .. %s", points[0], points[len(points)-1])
	}
	if attr(t, svg, "data-step-ms") != intStr(SparkStepMS) {
		t.Errorf("step")
	}
	// A short series grows from the right.
	short := render(t, Limiters(LimitersPage{Limiters: []LimiterRow{{Name: "y", Spark: []Counts{{Acquired: 0}, {Acquired: 2}}}}}))
	sp := strings.Fields(short.Find(`polyline[data-series="acquired"]`).AttrOr("points", ""))
	if len(sp) != 2 || sp[1] != "120.0,1.0" || sp[0] != "118.0,29.0" {
		t.Errorf("short series %v", sp)
	}
	empty := render(t, Limiters(LimitersPage{Limiters: []LimiterRow{{Name: "z"}}}))
	if p := empty.Find("polyline").First().AttrOr("points", "x"); p != "" {
		t.Errorf("empty series drew %q", p)
	}
}

func TestViewFormatting(t *testing.T) {
	for ms, want := range map[int64]string{-1: "no expiry", -2: "no expiry", 0: "0.0 s", 1234: "1.2 s", 59_900: "59.9 s", 61_000: "1 min 1 s", 3_600_000: "1 h", 3_725_000: "1 h 2 min"} {
		if got := pttlText(ms); got != want {
			t.Errorf("pttlText(%d) = %q, want %q", ms, got, want)
		}
	}
	for f, want := range map[float64]string{2: "2", 2.5: "2.5", 1.0 / 3: "0.33", 500: "500"} {
		if got := num(f); got != want {
			t.Errorf("num(%v) = %q, want %q", f, got, want)
		}
	}
	if got := dateClock(time.Date(2026, 11, 29, 16, 23, 38, 605068000, time.UTC)); got != "2026-11-29 16:23:38 UTC" {
		t.Errorf("dateClock %q", got)
	}
	if got := ageText(3*time.Hour + 5*time.Minute); got != "3 h 5 min" {
		t.Errorf("age %q", got)
	}
}

// A row left stale by CLUSTERDOWN names the Cluster's state, not the node
// (which answers, and was called "down" on rows of live masters).
func TestStaleTextNamesClusterDown(t *testing.T) {
	at := time.Date(2026, 11, 23, 13, 33, 15, 673e6, time.UTC)
	down := staleText(&StaleMark{Node: "10.0.0.1:7000", LastRead: at})
	if down != "node 10.0.0.1:7000 down, last read 13:33:15.673 UTC" {
		t.Errorf("down: %q", down)
	}
	cd := staleText(&StaleMark{Node: "10.0.0.2:7000", LastRead: at, ClusterDown: true})
	if !strings.HasPrefix(cd, "Cluster down: node 10.0.0.2:7000 refuses every key (CLUSTERDOWN)") {
		t.Errorf("CLUSTERDOWN: %q", cd)
	}
}
