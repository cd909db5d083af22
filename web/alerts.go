package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/alert"
)

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
