package web

import (
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/auth"
	"github.com/lockwarden/lockwarden/web/feed"
)

// handleWS hands a websocket viewer to the feed.
func (s *Server) handleWS(c echo.Context) error {
	if !websocket.IsWebSocketUpgrade(c.Request()) {
		return inspect.Invalid("", "websocket upgrade required")
	}
	if !auth.SameOrigin(c.Request()) {
		return inspect.Errorf(inspect.CodeForbidden, "cross-origin websocket refused")
	}
	// The slot is taken before the upgrade, so a flood of connections is
	// refused with a plain 503 and costs no goroutines.
	release, err := s.wsSlots.Take(identityOf(c).Role == auth.RoleAdmin && !s.auth.LocalMode(), c.RealIP())
	if err != nil {
		s.requests.wsRejected.Add(1)
		return err
	}
	att := feed.Attach{Release: release}
	// A browser's connection lives only as long as its session.
	if _, cerr := c.Request().Cookie(auth.SessionCookie); cerr == nil && !identityOf(c).Bearer && !s.auth.LocalMode() {
		att.Watch = s.sessionWatch(c.Request(), identityOf(c).Role)
	}
	return s.feed.Connect(c.Response(), c.Request(), att)
}
