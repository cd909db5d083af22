package web

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/views"
	"github.com/lockwarden/lockwarden/web/auth"
)

func (s *Server) loginPage(c echo.Context, status int, next, msg string) error {
	return s.render(c, status, views.Login(views.LoginPage{
		Layout: s.layout(c, "Sign in", ""),
		Next:   auth.SafeNext(next),
		Error:  msg,
	}))
}

func (s *Server) handleLoginPage(c echo.Context) error {
	next := auth.SafeNext(c.QueryParam("next"))
	if s.auth.LocalMode() {
		// Nothing to sign in to: everyone on loopback is an admin.
		return c.Redirect(http.StatusSeeOther, next)
	}
	return s.loginPage(c, http.StatusOK, next, "")
}

// handleLogin checks the submitted token and starts a session. A failure
// goes to the refused trail, a success to the sign-in trail's summaries.
func (s *Server) handleLogin(c echo.Context) error {
	next := auth.SafeNext(c.FormValue("next"))
	if s.auth.LocalMode() {
		return c.Redirect(http.StatusSeeOther, next)
	}
	cookie, id, err := s.auth.SignIn(c.Request().Context(), c.Request(), c.FormValue("token"), time.Now())
	if err != nil {
		s.refusedSignIn(c, "session", err)
		msg := "That token is not valid."
		if !errors.Is(err, auth.ErrUnauthenticated) {
			msg = toHTTPError(err).Message
		}
		return s.loginPage(c, toHTTPError(err).Status, next, msg)
	}
	// The sign-in is summarised (auth.SignIns), not recorded one by one:
	// writeAuditSummaries puts it in the sign-in trail.
	c.SetCookie(cookie)
	setIdentity(c, id)
	return c.Redirect(http.StatusSeeOther, next)
}

// handleLogout ends the session in Redis, so a copy of the cookie is dead
// on every replica, and clears the cookie.
func (s *Server) handleLogout(c echo.Context) error {
	if err := s.auth.SignOut(c.Request().Context(), c.Request()); err != nil {
		return err
	}
	c.SetCookie(auth.SessionCookieOf("", -1, auth.SecureRequest(c.Request())))
	if s.auth.LocalMode() {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	return c.Redirect(http.StatusSeeOther, "/login")
}
