package feed

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
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

// Attach is what comes with a viewer's connection.
type Attach struct {
	// Release frees the viewer's slot (taken by the caller before the
	// upgrade); called once, when the connection is done with.
	Release func()
	// Watch, when set, runs beside the connection until done is closed
	// (the connection's reader ended); a non-empty return closes the
	// connection with 1008 (policy) and that reason.
	Watch func(done <-chan struct{}) string
}

// Connect upgrades r to a websocket and hands it to the hub, with one
// reader and one writer (and a.Watch). A failed upgrade has been answered
// by the upgrader and is not an error.
func (f *Feed) Connect(w http.ResponseWriter, r *http.Request, a Attach) error {
	release := a.Release
	if release == nil {
		release = func() {}
	}
	conn, err := f.upgrader.Upgrade(w, r, nil)
	if err != nil {
		release()
		f.log.Debug("websocket upgrade failed", "err", err)
		return nil
	}
	cl := &wsClient{conn: conn, send: make(chan outFrame, sendBuffer), readerDone: make(chan struct{})}
	goroutines := 2
	if a.Watch != nil {
		goroutines = 3
	}
	if !f.admit(cl, goroutines) {
		release()
		_ = conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"),
			time.Now().Add(writeWait))
		_ = conn.Close()
		return nil
	}
	// The slot is released when the connection's reader and writer end.
	var left atomic.Int32
	left.Store(2)
	done := func() {
		if left.Add(-1) == 0 {
			release()
		}
		f.wg.Done()
	}
	go func() { defer done(); f.writer(cl) }()
	go func() { defer done(); f.reader(cl) }()
	if a.Watch != nil {
		go func() {
			defer f.wg.Done()
			if reason := a.Watch(cl.readerDone); reason != "" {
				_ = cl.conn.WriteControl(websocket.CloseMessage,
					websocket.FormatCloseMessage(websocket.ClosePolicyViolation, reason), time.Now().Add(writeWait))
				_ = cl.conn.Close()
			}
		}()
	}
	return nil
}

// admit registers cl and accounts for its two goroutines, unless the feed
// is closing: the server must not start waiting for connections while new
// ones can still be added.
func (f *Feed) admit(cl *wsClient, goroutines int) bool {
	f.wsMu.Lock()
	defer f.wsMu.Unlock()
	if f.wsClosed || !f.hub.register(cl) {
		return false
	}
	f.wg.Add(goroutines)
	return true
}

// reader is the connection's only reader: it answers pings, notices the
// peer going away and then unregisters the client.
func (f *Feed) reader(cl *wsClient) {
	defer func() {
		close(cl.readerDone)
		f.hub.unregister(cl)
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

// writer is the connection's only writer: frames from the hub, pings, and
// the close frame once the hub lets go of the client.
func (f *Feed) writer(cl *wsClient) {
	ping := time.NewTicker(pingPeriod)
	defer func() {
		ping.Stop()
		_ = cl.conn.Close()
	}()
	for {
		select {
		case frame, ok := <-cl.send:
			if !ok {
				closeWS(cl, cl.closeCode)
				return
			}
			_ = cl.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := writeFrame(cl.conn, frame); err != nil {
				f.hub.unregister(cl)
				return
			}
		case <-f.hub.done:
			// Registered too late to be closed by the hub's shutdown.
			closeWS(cl, websocket.CloseGoingAway)
			return
		case <-ping.C:
			if err := cl.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				f.hub.unregister(cl)
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
func closeWS(cl *wsClient, code int) {
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
