package web

import (
	"net/http"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/web/auth"
)

// handleWS hands a websocket viewer to the feed.
func (s *Server) handleWS(c echo.Context) error {
	if !websocket.IsWebSocketUpgrade(c.Request()) {
		return &httpError{Status: http.StatusBadRequest, Message: "websocket upgrade required"}
	}
	if !auth.SameOrigin(c.Request()) {
		return &httpError{Status: http.StatusForbidden, Message: "cross-origin websocket refused"}
	}
	return s.feed.Connect(c.Response(), c.Request())
}
