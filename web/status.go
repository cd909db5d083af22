package web

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/history"
	"github.com/lockwarden/lockwarden/web/live"
	"github.com/lockwarden/lockwarden/web/metrics"
)

// What the console costs and whether it works: the probes, /metrics,
// and the status page and API (discovery's figures, live.DiscoveryStatus,
// and the history's memory and writer state).

func (s *Server) handleHealthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok")
}

// handleReadyz answers 200 only when Redis answers PING within a second
// and the last probe found every master up: with a master down the
// console can neither show nor break that master's locks.
func (s *Server) handleReadyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), time.Second)
	defer cancel()
	if err := s.insp.Redis().Ping(ctx).Err(); err != nil {
		s.log.Warn("readiness: Redis ping failed", "err", err)
		return c.String(http.StatusServiceUnavailable, "redis unavailable")
	}
	if down := s.live.NodesDown(); len(down) > 0 {
		return c.String(http.StatusServiceUnavailable, "redis node down: "+strings.Join(down, ", "))
	}
	return c.String(http.StatusOK, "ready")
}

// statusJSON is GET /api/status: discovery's fields, and "history" (null
// when the console keeps none).
type statusJSON struct {
	*live.DiscoveryStatus
	History  *history.Stats        `json:"history"`
	Settings []live.SettingProblem `json:"settings"`
}

func (s *Server) historyStats() *history.Stats {
	if h := s.hist.History(); h != nil {
		st := h.Stats()
		// Both are snapshots the history never took: the ones its feed
		// skipped while it was busy turning an older one into a sample
		// (live.Detached), and the samples its writer was too busy for.
		st.Dropped += s.histObs.Skipped()
		return &st
	}
	return nil
}

func (s *Server) handleAPIStatus(c echo.Context) error {
	settings := s.live.Latest().SettingProblems()
	if settings == nil {
		settings = []live.SettingProblem{}
	}
	return c.JSON(http.StatusOK, statusJSON{DiscoveryStatus: s.live.Status(), History: s.historyStats(), Settings: settings})
}

// historyStatus is the status page's history section.
func historyStatus(st *history.Stats) *views.HistoryStatus {
	if st == nil {
		return nil
	}
	return &views.HistoryStatus{Writer: st.Writer, ID: st.ID, Keys: st.Keys, Bytes: st.BytesEstimate,
		LimitersKept: st.LimitersKept, LimitersOmitted: st.LimitersOmitted, LocksKept: st.LocksKept,
		LocksOmitted: st.LocksOmitted, LastFlush: st.LastFlush, LastError: st.LastError, Dropped: st.Dropped}
}

func (s *Server) handleStatusPage(c echo.Context) error {
	st := s.live.Status()
	m := views.StatusPage{
		Layout:            s.layout(c, "Status", ""),
		KeyspaceEvents:    st.KeyspaceEvents,
		Scanning:          st.Scanning,
		PassTarget:        time.Duration(st.PassTargetSeconds * float64(time.Second)),
		Budget:            st.Budget,
		Passes:            st.Passes,
		LastPassSeconds:   st.LastPassSeconds,
		KeysScanned:       st.KeysScanned,
		PageCount:         st.PageCount,
		CostPerKeyUsec:    st.CostPerKeyUsec,
		Keyspace:          st.Keyspace,
		BudgetPass:        time.Duration(st.BudgetPassSeconds * float64(time.Second)),
		Announced:         st.Announced,
		Notified:          st.Notified,
		IdleSkipped:       st.IdleSkipped,
		SamplingShare:     st.SamplingShare,
		RejectsRemembered: st.RejectsRemembered,
		RejectsSkipped:    st.RejectsSkipped,
		Locks:             st.Locks,
		Limiters:          st.Limiters,
		History:           historyStatus(s.historyStats()),
	}
	for _, p := range s.live.Latest().SettingProblems() {
		m.Settings = append(m.Settings, views.SettingRow{Rule: p.Rule, Node: p.Node, Setting: p.Setting, Value: p.Value, Says: p.Says, Fix: p.Fix})
	}
	if st.LastPassEnded != nil {
		m.LastPassEnded = *st.LastPassEnded
	}
	for i := len(st.Recent) - 1; i >= 0; i-- {
		r := st.Recent[i]
		m.Recent = append(m.Recent, views.FoundRow{Name: r.Name, Kind: r.Kind, Source: r.Source, At: r.At})
	}
	return s.render(c, http.StatusOK, views.Status(m))
}

// requestCounts are the web layer's own numbers for /metrics.
type requestCounts struct {
	redisErrors atomic.Int64    // requests that failed because Redis did not answer
	wsRejected  atomic.Int64    // websocket upgrades refused at a cap
	byClass     [6]atomic.Int64 // by status class: 1xx..5xx at index 1..5
}

func (r *requestCounts) count(status int) {
	if c := status / 100; c >= 1 && c <= 5 {
		r.byClass[c].Add(1)
	}
}

// counts gathers, at scrape time, what the parts that are not live or
// alert count: the feed, the event log and its relay, admin's audit
// trails, auth's failure counts, the webhook and the requests.
func (s *Server) counts() metrics.Counts {
	fc := s.feed.Counts()
	c := metrics.Counts{WSClients: fc.Clients, WSDropped: fc.Dropped, Broadcasts: fc.Broadcasts,
		Events: s.events.Count(), AuditErrors: s.admin.AuditErrors(),
		RedisErrors: s.requests.redisErrors.Load() + s.relay.RedisErrors(), WSRejected: s.requests.wsRejected.Load()}
	if l := s.admin.RefusedLog(); l != nil {
		written, held := l.Counts()
		c.AuditRefused, c.AuditSuppressed = int64(written), int64(held)
	}
	af := s.auth.Failures().Counts()
	c.AuthFailuresSignIn, c.AuthFailuresBearer, c.AuthLimited = int64(af.SignIn), int64(af.Bearer), int64(af.Limited)
	c.WebhookSent, c.WebhookFailed, c.WebhookDropped = s.webhook.Counts()
	for i := range c.Requests {
		c.Requests[i] = s.requests.byClass[i].Load()
	}
	return c
}

func (s *Server) handleMetrics(c echo.Context) error {
	s.metrics.Handler().ServeHTTP(c.Response(), c.Request())
	return nil
}

// statusRoutes adds the probes, /metrics and the status page and API.
func (s *Server) statusRoutes(e *echo.Echo) {
	e.GET("/healthz", s.handleHealthz)
	e.GET("/readyz", s.handleReadyz)
	e.GET("/metrics", s.handleMetrics)
	e.GET("/status", s.handleStatusPage)
	e.GET("/api/status", s.handleAPIStatus)
}
