package web

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/views"
)

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

// safeNext keeps the post-sign-in redirect on this console: a local path,
// never "//host" or "/\host" (which browsers treat as another origin).
func safeNext(next string) string {
	if len(next) > 2048 || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.HasPrefix(next, `/\`) || strings.ContainsAny(next, "\r\n\t") {
		return "/"
	}
	return next
}

func (s *Server) loginPage(c echo.Context, status int, next, msg string) error {
	return s.render(c, status, views.Login(views.LoginPage{
		Layout: s.layout(c, "Sign in", ""),
		Next:   safeNext(next),
		Error:  msg,
	}))
}

func (s *Server) handleLoginPage(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if s.localMode() {
		// Nothing to sign in to: everyone on loopback is an admin.
		return c.Redirect(http.StatusSeeOther, next)
	}
	return s.loginPage(c, http.StatusOK, next, "")
}

// handleLogin checks the submitted token and starts a session. Both the
// success and the failure are audited.
func (s *Server) handleLogin(c echo.Context) error {
	next := safeNext(c.FormValue("next"))
	if s.localMode() {
		return c.Redirect(http.StatusSeeOther, next)
	}
	tok := c.FormValue("token")
	r := s.tokenRole(tok)
	if r == roleNone {
		msg := "That token is not valid."
		s.auditFailedSignIn(c, "session", msg)
		return s.loginPage(c, http.StatusUnauthorized, next, msg)
	}
	fp := fingerprint(tok)
	ttl := s.sessionTTL()
	s.setSessionCookie(c, s.signSession(session{Role: r, Fingerprint: fp, Expires: time.Now().Add(ttl)}), int(ttl/time.Second))
	c.Set(identityKey, identity{Role: r, Fingerprint: fp})
	s.appendAudit(c, inspect.AuditRecord{Action: "sign-in", Target: "session", After: r.String(), Outcome: inspect.OutcomeOK})
	return c.Redirect(http.StatusSeeOther, next)
}

func (s *Server) handleLogout(c echo.Context) error {
	s.setSessionCookie(c, "", -1)
	if s.localMode() {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}
