package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// csrfContextKey is where the CSRF middleware leaves the token for views.
const csrfContextKey = "csrf"

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
	// so refusals are recorded too; origin, role, then the CSRF token.
	e.Use(s.observe, s.recoverPanics, securityHeaders, s.checkHost, limitBody,
		s.authenticate, s.auditMutations, sameOriginRequest, s.authorize, csrf(skipCSRF))

	e.GET("/healthz", s.handleHealthz)
	e.GET("/readyz", s.handleReadyz)
	e.GET("/metrics", s.handleMetrics)
	e.GET("/ws", s.handleWS)
	e.GET("/favicon.ico", s.handleFavicon)
	s.staticRoutes(e)

	e.GET("/login", s.handleLoginPage)
	e.POST("/login", s.handleLogin)
	e.POST("/logout", s.handleLogout)

	e.GET("/", s.handleOverview)
	e.GET("/locks", s.handleLocksPage)
	e.GET("/locks/:name", s.handleLockPage)
	e.GET("/locks/:name/force-unlock", s.handleForceUnlockConfirm)
	e.POST("/locks/:name/force-unlock", s.handleForceUnlockForm)
	e.GET("/limiters", s.handleLimitersPage)
	e.GET("/limiters/:name", s.handleLimiterPage)
	e.POST("/limiters/:name", s.handleLimiterForm)
	e.POST("/limiters/:name/reset", s.handleResetCounterForm)
	e.GET("/events", s.handleEventsPage)
	e.GET("/audit", s.handleAuditPage)
	e.GET("/wall", s.handleWall)

	api := e.Group("/api")
	api.GET("/locks", s.handleAPILocks)
	api.GET("/locks/:name", s.handleAPILock)
	api.POST("/locks/:name/force-unlock", s.handleAPIForceUnlock)
	api.GET("/limiters", s.handleAPILimiters)
	api.GET("/limiters/:name", s.handleAPILimiter)
	api.PUT("/limiters/:name", s.handleAPIModifyLimiter)
	api.POST("/limiters/:name/reset", s.handleAPIResetCounter)
	api.GET("/stats", s.handleAPIStats)
	api.GET("/events", s.handleAPIEvents)
	api.GET("/audit", s.handleAPIAudit)
	api.GET("/alerts", s.handleAPIAlerts)
	return e
}

// recoverPanics turns a handler panic into a logged 500 instead of a
// dropped connection.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = &httpError{Status: http.StatusInternalServerError, Message: "internal error",
					Err: fmt.Errorf("panic: %v\n%s", r, debug.Stack())}
			}
		}()
		return next(c)
	}
}

// limitBody rejects bodies over maxBodyBytes: at once when the length is
// declared, while reading when it is not.
func limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > maxBodyBytes {
			return &httpError{Status: http.StatusRequestEntityTooLarge, Message: "request body too large (limit 64 KiB)"}
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(c.Response(), r.Body, maxBodyBytes)
		}
		return next(c)
	}
}

func isSafeMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// bearerToken returns the token of an "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get(echo.HeaderAuthorization)
	const prefix = "bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", false
	}
	return strings.TrimSpace(h[len(prefix):]), true
}

// skipCSRF exempts API clients that authenticated with a Bearer header (a
// browser never attaches one on its own, so a forged cross-site request
// cannot carry it) and endpoints that change nothing.
func skipCSRF(c echo.Context) bool {
	if identityOf(c).Bearer {
		return true
	}
	p := c.Request().URL.Path
	return p == "/healthz" || p == "/readyz" || p == "/metrics" || p == "/ws" || strings.HasPrefix(p, "/static/")
}

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
		return "", badRequest("name", "the name in the path is not valid percent-encoding")
	}
	return name, nil
}

func (s *Server) handleHealthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok")
}

// handleReadyz answers 200 only when Redis answers PING within a second.
func (s *Server) handleReadyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), time.Second)
	defer cancel()
	if err := s.st.Redis().Ping(ctx).Err(); err != nil {
		s.log.Warn("readiness: Redis ping failed", "err", err)
		return c.String(http.StatusServiceUnavailable, "redis unavailable")
	}
	return c.String(http.StatusOK, "ready")
}
