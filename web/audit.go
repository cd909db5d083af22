package web

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
)

// The audit trail's pages. What goes into it: web/admin's actions record
// themselves; auditMutations records the state-changing requests that
// reached no action, and sign-ins record themselves.

// defaultAuditPage and maxAuditPage bound ?limit= on the audit views.
const (
	defaultAuditPage = 100
	maxAuditPage     = 500
)

func auditLimit(c echo.Context) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return defaultAuditPage, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxAuditPage {
		return 0, inspect.Invalid("limit", fmt.Sprintf("limit must be a whole number from 1 to %d", maxAuditPage))
	}
	return n, nil
}

func (s *Server) handleAPIAudit(c echo.Context) error {
	n, err := auditLimit(c)
	if err != nil {
		return err
	}
	recs, err := s.recentAudit(c, n)
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
	recs, err := s.recentAudit(c, n)
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
