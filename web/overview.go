package web

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/alert"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/listing"
	"github.com/lockwarden/lockwarden/web/live"
)

// The summary screens: the overview (/) and the wall (/wall), with the
// busiest limiters, the most contended locks, the firing alerts and the
// recent events; the alerts and the current windows as JSON.

// overviewEvents is how many events the overview passes to its list.
const overviewEvents = 20

// overviewBusiest is how many limiters the overview lists; wallTiles is
// how many get a tile on the wall.
const (
	overviewBusiest = 10
	wallTiles       = 24
)

// overviewCharts bounds the overview's 24 h thumbnails (a history read each).
const overviewCharts = 5

// topLimiters is the n limiters a summary shows first: those over the
// alert thresholds (worst first), then the busiest; ties by name.
func topLimiters(sn *live.Snapshot, n int) []inspect.LimiterInfo {
	type ranked struct {
		l     *inspect.LimiterInfo
		level int
		total int64
	}
	rs := make([]ranked, 0, len(sn.Limiters))
	for i := range sn.Limiters {
		l := &sn.Limiters[i]
		w := counts(sn.Window(l.Name))
		level := 0
		if !l.RejectionsHidden {
			switch views.RatioClass(w) {
			case "ratio-bad":
				level = 2
			case "ratio-warn":
				level = 1
			}
		}
		rs = append(rs, ranked{l, level, w.Total()})
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if c := cmp.Compare(b.level, a.level); c != 0 {
			return c
		}
		if c := cmp.Compare(b.total, a.total); c != 0 {
			return c
		}
		return strings.Compare(a.l.Name, b.l.Name)
	})
	out := make([]inspect.LimiterInfo, 0, min(n, len(rs)))
	for _, r := range rs[:min(n, len(rs))] {
		out = append(out, *r.l)
	}
	return out
}

func (s *Server) handleOverview(c echo.Context) error {
	sn, err := s.snapshotFor()
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.Overview(views.OverviewPage{
		Layout:       s.layout(c, "Overview", views.NavOverview),
		LockCount:    len(sn.Locks),
		LimiterCount: len(sn.Limiters),
		Busiest:      s.limiterRows(sn, topLimiters(sn, overviewBusiest)),
		Events:       eventRows(s.events.Recent(overviewEvents)),
		Alerts:       s.alertRows(),
		Charts:       s.overviewThumbs(c.Request().Context(), sn),
		LockCharts:   s.overviewLockThumbs(c.Request().Context()),
	}))
}

// overviewThumbs are the last 24 h of the busiest limiters now.
func (s *Server) overviewThumbs(ctx context.Context, sn *live.Snapshot) []views.LimiterChart {
	if s.hist.History() == nil {
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

// overviewLockThumbs are the last 24 h of waits of the locks with the most
// contended acquisitions in them.
func (s *Server) overviewLockThumbs(ctx context.Context) []views.WaitStrip {
	if s.hist.History() == nil {
		return nil
	}
	top, err := s.hcache.MostContended(ctx, overviewCharts, history.SpanDay)
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

// handleWall shows a tile for each of the wallTiles most urgent limiters
// and one line for the rest, so the page stays readable and bounded at any
// number of limiters.
func (s *Server) handleWall(c echo.Context) error {
	lockSort, err := wallLockSort(c)
	if err != nil {
		return err
	}
	sn, err := s.snapshotFor()
	if err != nil {
		return err
	}
	top := topLimiters(sn, wallTiles)
	page := views.WallPage{
		Layout:    s.layout(c, "Wall", views.NavWall),
		Limiters:  s.limiterRows(sn, top),
		LockCount: len(sn.Locks),
		LockSort:  lockSort,
		Locks:     wallLocks(sn, lockSort),
		Events:    eventRows(s.events.Recent(views.EventRows)),
		Alerts:    s.alertRows(),
	}
	shown := make(map[string]bool, len(top))
	for _, l := range top {
		shown[l.Name] = true
	}
	for _, l := range sn.Limiters {
		if !shown[l.Name] {
			w := sn.Window(l.Name)
			page.Rest.Count++
			page.Rest.Acquired += w.Acquired
			page.Rest.Rejected += w.Rejected
		}
	}
	return s.render(c, http.StatusOK, views.Wall(page))
}

// wallSorts are the orders of the wall's locks (?sort=): by name, or the
// most contended first (static/waits.js re-orders them the same way as
// frames arrive).
var wallSorts = []string{listing.SortName, listing.SortContention}

// wallLockSort reads the wall's ?sort=; a bad value is a 400 naming it.
func wallLockSort(c echo.Context) (string, error) {
	switch s := c.QueryParam("sort"); s {
	case "":
		return listing.SortName, nil
	case listing.SortName, listing.SortContention:
		return s, nil
	default:
		return "", inspect.Invalid("sort", "sort must be one of "+strings.Join(wallSorts, ", "))
	}
}

// wallLocks are the first views.WallLocks locks of sn in the order sort
// asks for. By contention the key is the inverse of contentionKey, so the
// order's ascending pass puts the most contended first and breaks ties by
// name, as the script does.
func wallLocks(sn *live.Snapshot, sort string) []views.LockRow {
	ks := listing.WallLocks(sn, sort)
	out := make([]views.LockRow, 0, min(len(ks), views.WallLocks))
	for _, k := range ks[:min(len(ks), views.WallLocks)] {
		l := sn.Locks[k.I]
		out = append(out, views.LockRow{Name: l.Name, Kind: string(l.Kind), WaitersTotal: l.WaitersTotal,
			Wait: waitRow(sn.Waits(l.Name).TenSeconds)})
	}
	return out
}

// The alert rules as the binary configures them (web/alert defines them).
type (
	AlertConfig = alert.Config
	Alert       = alert.Alert
)

const (
	RuleLockNoExpiry            = alert.RuleLockNoExpiry
	RuleLockHeldTooLong         = alert.RuleLockHeldTooLong
	RuleLockWaitTooLong         = alert.RuleLockWaitTooLong
	RuleLockDeadlinePassed      = alert.RuleLockDeadlinePassed
	RuleLockRenewedByGoneClient = alert.RuleLockRenewedByGoneClient
	RuleLimiterRejectRatio      = alert.RuleLimiterRejectRatio
	RuleLimiterErrors           = alert.RuleLimiterErrors
	RuleAuthFailures            = alert.RuleAuthFailures
	RuleRedisDown               = alert.RuleRedisDown
	RuleNodeDown                = alert.RuleNodeDown
	RuleLockDeadlock            = alert.RuleLockDeadlock
	RuleLockLeaseLost           = alert.RuleLockLeaseLost
	RuleRedisEvictsLocks        = alert.RuleRedisEvictsLocks
	RuleRedisAcksNoReplica      = alert.RuleRedisAcksNoReplica
	RuleRedisFencingNotKept     = alert.RuleRedisFencingNotKept
	RuleRedisKeyspaceEventsOff  = alert.RuleRedisKeyspaceEventsOff
	DefaultHeldTooLong          = alert.DefaultHeldTooLong
	DefaultWaitTooLong          = alert.DefaultWaitTooLong
	DefaultRejectRatio          = alert.DefaultRejectRatio
)

// CheckWebhookURL says what is wrong with an --alert-webhook value.
func CheckWebhookURL(raw string) error { return alert.CheckWebhookURL(raw) }

// alertRows are the firing alerts as the overview and the wall show them.
func (s *Server) alertRows() []views.AlertRow {
	var rows []views.AlertRow
	for _, a := range s.alerts.Firing() {
		rows = append(rows, views.AlertRow{Rule: a.Rule, Name: a.Name, Severity: a.Severity, Message: a.Message, Since: a.Since})
	}
	return rows
}

type alertsJSON struct {
	Alerts []Alert `json:"alerts"`
}

func (s *Server) handleAPIAlerts(c echo.Context) error {
	return c.JSON(http.StatusOK, alertsJSON{Alerts: s.alerts.Firing()})
}

type statsJSON struct {
	BucketMS int                       `json:"bucket_ms"`
	WindowMS int                       `json:"window_ms"`
	At       int64                     `json:"at"`
	Limiters map[string]inspect.Counts `json:"limiters"`
	Locks    map[string]inspect.Counts `json:"locks"`
}

func (s *Server) handleAPIStats(c echo.Context) error {
	out := statsJSON{BucketMS: inspect.BucketMS, WindowMS: inspect.WindowMS,
		Limiters: map[string]inspect.Counts{}, Locks: map[string]inspect.Counts{}}
	sn := s.live.Latest()
	if sn == nil || sn.At == 0 {
		out.At = time.Now().UnixMilli() / inspect.BucketMS * inspect.BucketMS
	} else {
		out.At = sn.At
		for _, l := range sn.Limiters {
			out.Limiters[l.Name] = sn.Window(l.Name)
		}
		for _, l := range sn.Locks {
			out.Locks[l.Name] = sn.Window(l.Name)
		}
	}
	return c.JSON(http.StatusOK, out)
}

// overviewRoutes adds the overview, the wall, /api/alerts and /api/stats.
func (s *Server) overviewRoutes(e *echo.Echo) {
	e.GET("/", s.handleOverview)
	e.GET("/wall", s.handleWall)
	e.GET("/api/alerts", s.handleAPIAlerts)
	e.GET("/api/stats", s.handleAPIStats)
}
