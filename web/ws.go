package web

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/lockwarden/lockwarden/web/auth"
)

const (
	// writeWait bounds every write, so a peer that stops reading costs a
	// goroutine for seconds, not forever.
	writeWait = 5 * time.Second
	// pongWait is how long a connection may stay silent; pings go out well
	// before it runs out.
	pongWait   = 30 * time.Second
	pingPeriod = pongWait * 2 / 5
	// maxClientMessage bounds what a viewer may send; the protocol is
	// server-to-client, so anything but control frames is ignored.
	maxClientMessage = 1024
	// closeWait is how long the writer lingers after a close frame so the
	// peer can read it before the socket goes away.
	closeWait = 500 * time.Millisecond
)

var upgrader = websocket.Upgrader{
	ReadBufferSize:   1024,
	WriteBufferSize:  8192,
	HandshakeTimeout: 5 * time.Second,
	CheckOrigin:      auth.SameOrigin,
}

// handleWS upgrades to a websocket and hands the connection to the hub.
func (s *Server) handleWS(c echo.Context) error {
	if !websocket.IsWebSocketUpgrade(c.Request()) {
		return &httpError{Status: http.StatusBadRequest, Message: "websocket upgrade required"}
	}
	if !auth.SameOrigin(c.Request()) {
		return &httpError{Status: http.StatusForbidden, Message: "cross-origin websocket refused"}
	}
	// The slot is taken before the upgrade, so a flood of connections is
	// refused with a plain 503 and costs no goroutines.
	release, err := s.wsSlots.take(identityOf(c).Role == auth.RoleAdmin && !s.auth.LocalMode(), c.RealIP())
	if err != nil {
		s.metrics.wsRejected.Add(1)
		return err
	}
	conn, err := upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		release()
		// Upgrade has already answered the client.
		s.reqLog(c).Debug("websocket upgrade failed", "err", err)
		return nil
	}
	cl := &wsClient{conn: conn, send: make(chan outFrame, sendBuffer), readerDone: make(chan struct{})}
	// A browser's connection lives only as long as its session.
	_, cerr := c.Request().Cookie(auth.SessionCookie)
	watch := cerr == nil && !identityOf(c).Bearer && !s.auth.LocalMode()
	if !s.admitWS(cl, watch) {
		release()
		_ = conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"),
			time.Now().Add(writeWait))
		_ = conn.Close()
		return nil
	}
	// The slot is released when both of the connection's goroutines end.
	var left atomic.Int32
	left.Store(2)
	done := func() {
		if left.Add(-1) == 0 {
			release()
		}
		s.ws.Done()
	}
	go func() { defer done(); s.wsWriter(cl) }()
	go func() { defer done(); s.wsReader(cl) }()
	if watch {
		go func() { defer s.ws.Done(); s.watchSession(c.Request(), identityOf(c).Role, cl) }()
	}
	return nil
}

// admitWS registers cl and accounts for its two goroutines (three with
// the session watch), unless the server is closing: Close must not start
// waiting for connections while new ones can still be added.
func (s *Server) admitWS(cl *wsClient, watch bool) bool {
	s.wsMu.Lock()
	defer s.wsMu.Unlock()
	if s.wsClosed || !s.hub.register(cl) {
		return false
	}
	s.ws.Add(2)
	if watch {
		s.ws.Add(1)
	}
	return true
}

// wsReader is the connection's only reader: it answers pings, notices the
// peer going away and then unregisters the client.
func (s *Server) wsReader(cl *wsClient) {
	defer func() {
		close(cl.readerDone)
		s.hub.unregister(cl)
		_ = cl.conn.Close()
	}()
	cl.conn.SetReadLimit(maxClientMessage)
	_ = cl.conn.SetReadDeadline(time.Now().Add(pongWait))
	cl.conn.SetPongHandler(func(string) error {
		return cl.conn.SetReadDeadline(time.Now().Add(pongWait))
	})
	for {
		if _, _, err := cl.conn.ReadMessage(); err != nil {
			return
		}
		// Any message proves the peer is alive.
		_ = cl.conn.SetReadDeadline(time.Now().Add(pongWait))
	}
}

// wsWriter is the connection's only writer: frames from the hub, pings, and
// the close frame once the hub lets go of the client.
func (s *Server) wsWriter(cl *wsClient) {
	ping := time.NewTicker(pingPeriod)
	defer func() {
		ping.Stop()
		_ = cl.conn.Close()
	}()
	for {
		select {
		case frame, ok := <-cl.send:
			if !ok {
				s.closeWS(cl, cl.closeCode)
				return
			}
			_ = cl.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := writeFrame(cl.conn, frame); err != nil {
				s.hub.unregister(cl)
				return
			}
		case <-s.hub.done:
			// Registered too late to be closed by the hub's shutdown.
			s.closeWS(cl, websocket.CloseGoingAway)
			return
		case <-ping.C:
			if err := cl.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				s.hub.unregister(cl)
				return
			}
		}
	}
}

// writeFrame writes a frame through its prepared form, framed once for
// every viewer, when it has one.
func writeFrame(conn *websocket.Conn, f outFrame) error {
	if f.pm != nil {
		return conn.WritePreparedMessage(f.pm)
	}
	return conn.WriteMessage(websocket.TextMessage, f.data)
}

// closeWS sends a close frame with code and lets the peer read and answer
// it; the reader ends as soon as the peer does so or hangs up.
func (s *Server) closeWS(cl *wsClient, code int) {
	_ = cl.conn.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(code, closeReason(code)), time.Now().Add(writeWait))
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-cl.readerDone:
	case <-t.C:
	}
}

func closeReason(code int) string {
	switch code {
	case websocket.CloseGoingAway:
		return "server shutting down"
	case websocket.CloseTryAgainLater:
		return "too slow: frames were dropped"
	}
	return ""
}
