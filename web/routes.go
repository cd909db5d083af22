package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/admin"
)

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	// The audit trail and logs record the peer address. Forwarded-for
	// headers are the client's word, so they are not trusted.
	e.IPExtractor = echo.ExtractIPDirect()

	// Order matters: identify the request, refuse foreign hosts, bound the
	// body, then who is asking; the audit record opens before the checks
	// so refusals are recorded too; origin, then role.
	e.Use(requestIDs, s.observe, recoverPanics, securityHeaders, noStore, s.checkHost,
		middleware.BodyLimit(bodyLimit), s.authenticate, s.auditMutations, crossOrigin(s.cfg.AllowedHosts), s.authorize, s.scoped)

	e.GET("/healthz", s.handleHealthz)
	e.GET("/readyz", s.handleReadyz)
	e.GET("/metrics", s.handleMetrics)
	e.GET("/ws", s.handleWS)
	e.GET("/favicon.ico", s.handleFavicon)
	s.staticRoutes(e)

	e.GET("/login", s.handleLoginPage)
	e.POST("/login", s.handleLogin)
	s.mutation(e.POST, "/logout", admin.ActionSignOut, s.handleLogout)

	e.GET("/", s.handleOverview)
	e.GET("/locks", s.handleLocksPage)
	e.GET("/locks/:name", s.handleLockPage)
	e.GET("/locks/:name/force-unlock", s.handleForceUnlockConfirm)
	s.mutation(e.POST, "/locks/:name/force-unlock", admin.ActionForceUnlock, s.handleForceUnlockForm)
	e.GET("/limiters", s.handleLimitersPage)
	e.GET("/limiters/:name", s.handleLimiterPage)
	s.mutation(e.POST, "/limiters/:name", admin.ActionModify, s.handleLimiterForm)
	s.mutation(e.POST, "/limiters/:name/reset", admin.ActionReset, s.handleResetCounterForm)
	e.GET("/families", s.handleFamiliesPage)
	e.GET("/families/:name", s.handleFamilyPage)
	s.mutation(e.POST, "/families/:name/reset", admin.ActionReset, s.handleFamilyResetForm)
	e.GET("/events", s.handleEventsPage)
	e.GET("/audit", s.handleAuditPage)
	e.GET("/clients", s.handleClientsPage)
	e.GET("/deadlocks", s.handleDeadlocksPage)
	s.mutation(e.POST, "/clients/:id/release-all", admin.ActionReleaseAll, s.handleReleaseAllForm)
	e.GET("/wall", s.handleWall)
	e.GET("/status", s.handleStatusPage)

	api := e.Group("/api")
	api.GET("/locks", s.handleAPILocks)
	api.GET("/locks/:name", s.handleAPILock)
	api.GET("/locks/:name/history", s.handleAPILockHistory)
	s.mutation(e.POST, "/api/locks/:name/force-unlock", admin.ActionForceUnlock, s.handleAPIForceUnlock)
	api.GET("/limiters", s.handleAPILimiters)
	api.GET("/limiters/:name", s.handleAPILimiter)
	api.GET("/limiters/:name/history", s.handleAPILimiterHistory)
	s.query(e.POST, "/api/limiters/:name/what-if", s.handleAPIWhatIf)
	s.mutation(e.PUT, "/api/limiters/:name", admin.ActionModify, s.handleAPIModifyLimiter)
	s.mutation(e.POST, "/api/limiters/:name/reset", admin.ActionReset, s.handleAPIResetCounter)
	api.GET("/families", s.handleAPIFamilies)
	api.GET("/families/:name", s.handleAPIFamily)
	s.mutation(e.POST, "/api/families/:name/reset", admin.ActionReset, s.handleAPIFamilyReset)
	api.GET("/stats", s.handleAPIStats)
	api.GET("/events", s.handleAPIEvents)
	api.GET("/audit", s.handleAPIAudit)
	api.GET("/alerts", s.handleAPIAlerts)
	api.GET("/deadlocks", s.handleAPIDeadlocks)
	api.GET("/status", s.handleAPIStatus)
	api.GET("/clients", s.handleAPIClients)
	s.mutation(e.POST, "/api/clients/:id/release-all", admin.ActionReleaseAll, s.handleAPIReleaseAll)
	return e
}

// mutation adds a state-changing route and names the action the audit
// trail records for requests that reach no admin action (refused ones).
func (s *Server) mutation(add func(string, echo.HandlerFunc, ...echo.MiddlewareFunc) *echo.Route, path, action string, h echo.HandlerFunc) {
	r := add(path, h)
	s.actions[r.Method+" "+path] = action
}

// query adds a route that takes a body but changes nothing (a what-if):
// any role that may read may send it, and no audit trail records it. The
// cross-origin check still applies, as to every method that is not safe.
func (s *Server) query(add func(string, echo.HandlerFunc, ...echo.MiddlewareFunc) *echo.Route, path string, h echo.HandlerFunc) {
	r := add(path, h)
	s.queries[r.Method+" "+path] = true
}

// recoverPanics is Echo's Recover, handing the panic and its stack back as
// an error so observe logs it with the request ID and handleError answers
// 500 (Echo's default would print through its own logger).
var recoverPanics = middleware.RecoverWithConfig(middleware.RecoverConfig{
	DisableErrorHandler: true,
	LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
		return fmt.Errorf("panic: %w\n%s", err, stack)
	},
})

// nameParam is the object name of the route: one path segment, unescaped
// exactly once. Echo matches on the raw path (and leaves the segment
// escaped) only when the request path holds escapes that decoding would
// change, such as %2F; otherwise the segment is already decoded, and
// decoding it again would turn a name like "%41" into "A".
func nameParam(c echo.Context) (string, error) {
	raw := c.Param("name")
	if c.Request().URL.RawPath == "" {
		return raw, nil
	}
	name, err := url.PathUnescape(raw)
	if err != nil {
		return "", inspect.Invalid("name", "the name in the path is not valid percent-encoding")
	}
	return name, nil
}

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
