package views

import (
	"strings"
	"testing"
	"time"
)

func TestViewAlerts(t *testing.T) {
	since := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	alerts := []AlertRow{
		{Rule: "redis-down", Severity: "critical", Message: "the console cannot read Redis", Since: since},
		{Rule: "lock-no-expiry", Name: "job<1>", Severity: "warning", Message: "lock job<1> has no expiry", Since: since},
	}
	doc := render(t, Overview(OverviewPage{Layout: layout(NavOverview), Alerts: alerts}))
	rows := one(t, doc.Selection, "alerts").Find(tid("alert"))
	if rows.Length() != 2 {
		t.Fatalf("%d alerts shown", rows.Length())
	}
	first, second := rows.Eq(0), rows.Eq(1)
	if first.AttrOr("data-rule", "") != "redis-down" || !first.HasClass("banner-error") ||
		second.AttrOr("data-name", "") != "job<1>" || !strings.Contains(second.Text(), "lock job<1> has no expiry") {
		t.Errorf("alerts: %q / %q", first.Text(), second.Text())
	}
	if second.Find("time").AttrOr("datetime", "") != "2026-05-06T07:08:09Z" {
		t.Errorf("since: %v", second.Find("time").Nodes)
	}
	quiet := render(t, Overview(OverviewPage{Layout: layout(NavOverview)}))
	one(t, quiet.Selection, "alerts-empty")

	// The wall shows them first, before the tiles, and nothing without any.
	wall := render(t, Wall(WallPage{Layout: Layout{Title: "Wall"}, Limiters: limiterRows(), Alerts: alerts}))
	html, _ := wall.Html()
	if a, tiles := strings.Index(html, `data-testid="alerts"`), strings.Index(html, `data-testid="wall-tiles"`); a < 0 || a > tiles {
		t.Errorf("alerts not before the tiles on the wall (%d, %d)", a, tiles)
	}
	calm := render(t, Wall(WallPage{Layout: Layout{Title: "Wall"}, Limiters: limiterRows()}))
	if calm.Find(tid("alerts")).Length()+calm.Find(tid("alerts-empty")).Length() != 0 {
		t.Error("the wall shows an alerts section without alerts")
	}
}

// The wall lists the most urgent alerts in full and counts the rest, so
// its tiles stay on the screen; the overview lists them all.
func TestViewWallAlertsBounded(t *testing.T) {
	var alerts []AlertRow
	for i := range WallAlerts + 2 {
		alerts = append(alerts, AlertRow{Rule: "lock-held-too-long", Name: "lock" + intStr(i), Severity: "warning", Message: "held", Since: at})
	}
	wall := render(t, Wall(WallPage{Layout: layout(NavWall), Alerts: alerts}))
	if n := wall.Find(tid("alert")).Length(); n != WallAlerts {
		t.Errorf("the wall lists %d alerts, want %d", n, WallAlerts)
	}
	if got := text(t, wall.Selection, "alerts-more"); got != "and 2 more alerts firing" {
		t.Errorf("the wall's count of the rest %q", got)
	}
	if got := text(t, render(t, Wall(WallPage{Layout: layout(NavWall), Alerts: alerts[:WallAlerts+1]})).Selection, "alerts-more"); got != "and 1 more alert firing" {
		t.Errorf("one alert more: %q", got)
	}
	over := render(t, Overview(OverviewPage{Layout: layout(NavOverview), Alerts: alerts}))
	if n := over.Find(tid("alert")).Length(); n != len(alerts) || over.Find(tid("alerts-more")).Length() != 0 {
		t.Errorf("the overview lists %d alerts, want all %d", n, len(alerts))
	}
}
