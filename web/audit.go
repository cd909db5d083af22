package web

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
)

// Every state-changing request is audited, whatever becomes of it: the
// middleware opens a record before the checks run, handlers add what they
// know (target, state before and after, reason), and the outcome is the
// response status. Failed sign-ins are audited where they are detected.

const auditRecordKey = "lw.audit"

// auditWriteTimeout bounds the append: the trail is important, but a
// Redis that does not answer must not hold the response for long.
const auditWriteTimeout = 2 * time.Second

// defaultAuditPage and maxAuditPage bound ?limit= on the audit views.
const (
	defaultAuditPage = 100
	maxAuditPage     = 500
)

// auditAction names what a route does, for the record.
func auditAction(method, route string) string {
	switch {
	case strings.HasSuffix(route, "/force-unlock"):
		return "force-unlock"
	case strings.HasSuffix(route, "/release-all"):
		return "release-all"
	case strings.HasSuffix(route, "/reset"):
		return "reset"
	case route == "/limiters/:name" || route == "/api/limiters/:name":
		return "modify"
	case route == "/login":
		return "sign-in"
	case route == "/logout":
		return "sign-out"
	}
	// Any future mutation is audited too, under its method and route.
	return strings.ToLower(method) + " " + route
}

// auditRecord is the record being built for this request; a throwaway one
// when the request is not audited, so handlers need no nil checks.
func auditRecord(c echo.Context) *inspect.AuditRecord {
	if r, ok := c.Get(auditRecordKey).(*inspect.AuditRecord); ok {
		return r
	}
	return &inspect.AuditRecord{}
}

func outcomeFor(status int) string {
	switch {
	case status < 400:
		return inspect.OutcomeOK
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return inspect.OutcomeDenied
	case status == http.StatusNotFound:
		return inspect.OutcomeNotFound
	case status == http.StatusConflict:
		return inspect.OutcomeConflict
	case status < 500:
		return inspect.OutcomeInvalid
	}
	return inspect.OutcomeError
}

// auditMutations records every unsafe request. Sign-in records itself
// (it knows success from failure better than a status does).
func (s *Server) auditMutations(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if isSafeMethod(r.Method) || c.Path() == "/login" {
			return next(c)
		}
		rec := &inspect.AuditRecord{Action: auditAction(r.Method, c.Path())}
		if name, err := nameParam(c); err == nil {
			rec.Target = name
		}
		c.Set(auditRecordKey, rec)
		err := next(c)
		status := c.Response().Status
		if err != nil {
			he := toHTTPError(err)
			status = he.Status
			rec.Detail = he.Message
		}
		rec.Outcome = outcomeFor(status)
		s.appendAudit(c, *rec)
		return err
	}
}

// appendAudit fills in the actor and writes rec. A failed write is logged
// and counted; the response the client gets does not change.
func (s *Server) appendAudit(c echo.Context, rec inspect.AuditRecord) {
	id := identityOf(c)
	rec.Role = id.Role.String()
	rec.Fingerprint = id.Fingerprint
	rec.Remote = c.RealIP()
	rec.RequestID = requestID(c)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), auditWriteTimeout)
	defer cancel()
	if _, err := s.audit.Append(ctx, rec); err != nil {
		s.metrics.auditErrors.Add(1)
		s.reqLog(c).Error("audit append failed", "action", rec.Action, "target", rec.Target, "outcome", rec.Outcome, "err", err)
	}
}

// auditFailedSignIn records a refused token, throttled: a flood of bad
// tokens must not push real records out of the capped stream.
func (s *Server) auditFailedSignIn(c echo.Context, target, msg string) {
	if !s.failThrottle.allow(time.Now()) {
		s.metrics.auditSuppressed.Add(1)
		return
	}
	s.appendAudit(c, inspect.AuditRecord{Action: "sign-in", Target: target, Outcome: inspect.OutcomeDenied, Detail: msg})
}

// throttle is a small token bucket: burst records at once, then rate per
// second.
type throttle struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
	burst  float64
	rate   float64
}

func newThrottle(burst, perSecond float64) *throttle {
	return &throttle{tokens: burst, burst: burst, rate: perSecond}
}

func (t *throttle) allow(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() {
		t.tokens = min(t.burst, t.tokens+now.Sub(t.last).Seconds()*t.rate)
	}
	t.last = now
	if t.tokens < 1 {
		return false
	}
	t.tokens--
	return true
}

func auditLimit(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return defaultAuditPage, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxAuditPage {
		return 0, badRequest("limit", fmt.Sprintf("limit must be a whole number from 1 to %d", maxAuditPage))
	}
	return n, nil
}

func (s *Server) handleAPIAudit(c echo.Context) error {
	n, err := auditLimit(c)
	if err != nil {
		return err
	}
	recs, err := s.audit.Recent(c.Request().Context(), n)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"records": recs})
}

func (s *Server) handleAuditPage(c echo.Context) error {
	n, err := auditLimit(c)
	if err != nil {
		return err
	}
	recs, err := s.audit.Recent(c.Request().Context(), n)
	if err != nil {
		return err
	}
	page := views.AuditPage{Layout: s.layout(c, "Audit", views.NavAudit)}
	for _, r := range recs {
		page.Records = append(page.Records, views.AuditRow{At: r.Time, Role: r.Role, Fingerprint: r.Fingerprint,
			Remote: r.Remote, Action: r.Action, Target: r.Target, Before: r.Before, After: r.After,
			Outcome: r.Outcome, Reason: r.Reason, Detail: r.Detail})
	}
	return s.render(c, http.StatusOK, views.Audit(page))
}
