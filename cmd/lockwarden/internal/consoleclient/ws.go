package consoleclient

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

const (
	// Reconnect delays double from backoffMin to backoffMax, as the
	// browser client's (static/live.js) do, with jitter, so the terminals
	// and walls watching a restarted console do not all knock at once.
	backoffMin = 250 * time.Millisecond
	backoffMax = 5 * time.Second
	// readWait is how long a connection may stay silent: the console
	// sends five stats frames a second and pings every 12 s, so a longer
	// silence is a console that went away without closing (killed, or
	// its host gone).
	readWait = 30 * time.Second
	// handshakeWait bounds the websocket handshake.
	handshakeWait = 5 * time.Second
)

// What Watch reports, in order: Connected, then a Frame per message, then
// Disconnected when the connection ends (and Connected again once back).
type (
	// Connected: a websocket to the console is open. Its first stats
	// frame is a full one.
	Connected struct{}
	// Frame is one frame as the console sent it (see Live.Apply).
	Frame struct{ Data []byte }
	// Disconnected: the connection ended or could not be opened, for Err;
	// the next attempt is in RetryIn.
	Disconnected struct {
		Err     error
		RetryIn time.Duration
	}
)

// WSURL is the console's websocket: ws:// or wss:// at /ws.
func (c *Client) WSURL() string {
	u := *c.base
	u.Scheme = "ws"
	if c.base.Scheme == "https" {
		u.Scheme = "wss"
	}
	u.Path += "/ws"
	return u.String()
}

// Watch keeps a websocket to the console open until ctx ends, reopening it
// with backoff, and hands every event to send, which must not block for
// long: the console drops a viewer that falls 64 frames behind.
func (c *Client) Watch(ctx context.Context, send func(any)) {
	failures := 0
	for ctx.Err() == nil {
		conn, err := c.dialWS(ctx)
		if err == nil {
			failures = 0
			send(Connected{})
			err = read(ctx, conn, send)
		}
		if ctx.Err() != nil {
			return
		}
		delay := min(backoffMax, backoffMin<<min(failures, 5))
		delay = delay/2 + rand.N(delay/2+1)
		failures++
		send(Disconnected{Err: err, RetryIn: delay})
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (c *Client) dialWS(ctx context.Context) (*websocket.Conn, error) {
	hdr := http.Header{}
	if c.token != "" {
		hdr.Set("Authorization", "Bearer "+c.token)
	}
	d := websocket.Dialer{HandshakeTimeout: handshakeWait, Proxy: http.ProxyFromEnvironment}
	conn, resp, err := d.DialContext(ctx, c.WSURL(), hdr)
	if err != nil {
		if resp != nil {
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			return nil, refusal(http.MethodGet, c.WSURL(), resp, body)
		}
		return nil, &UnreachableError{URL: c.URL(), Err: err}
	}
	return conn, nil
}

// read hands every frame of conn to send until the connection ends or ctx
// does; it always closes conn.
func read(ctx context.Context, conn *websocket.Conn, send func(any)) error {
	stop := context.AfterFunc(ctx, func() {
		_ = conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(time.Second))
		_ = conn.Close()
	})
	defer stop()
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(readWait))
	conn.SetPingHandler(func(data string) error {
		_ = conn.SetReadDeadline(time.Now().Add(readWait))
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		if err == websocket.ErrCloseSent {
			return nil
		}
		return err
	})
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return err
		}
		_ = conn.SetReadDeadline(time.Now().Add(readWait))
		send(Frame{Data: data})
	}
}
