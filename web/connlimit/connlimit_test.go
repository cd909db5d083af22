package connlimit

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// server serves h on 127.0.0.1 behind a Limiter with opts. A request with
// "X-Auth: yes" is an authenticated one.
func server(t *testing.T, opts *Options, h http.HandlerFunc) (*Limiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(opts)
	if h == nil {
		h = func(http.ResponseWriter, *http.Request) {}
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Auth") == "yes" {
				Authenticated(r.Context())
			}
			h(w, r)
		}),
		ConnState: l.ConnState, ConnContext: l.ConnContext, IdleTimeout: time.Minute,
	}
	go func() { _ = srv.Serve(l.Listener(ln)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l, ln.Addr().String()
}

// open dials addr from ip, sends one request (authenticated if auth) and
// reads its answer; the connection stays open (closed at the test's end).
func open(t *testing.T, ip, addr string, auth bool) (net.Conn, error) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	hdr := ""
	if auth {
		hdr = "X-Auth: yes\r\n"
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n"+hdr+"\r\n"); err != nil {
		return c, err
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, err
	}
	resp.Body.Close()
	return c, nil
}

// closed reports whether the server has closed c (waiting up to d for it).
func closed(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	defer c.SetReadDeadline(time.Time{})
	_, err := c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// One source past its share replaces its own longest-idle connections;
// it never holds more than the share, and another source is served.
func TestShareOfOneSource(t *testing.T) {
	l, addr := server(t, &Options{Max: 100, PerSource: 4, PreAuthIdle: time.Minute}, nil)
	var conns []net.Conn
	for i := range 10 {
		c, err := open(t, "127.0.0.5", addr, false)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		allIdle(t, l)
	}
	if n := l.Counts().Open; n > 4 {
		t.Fatalf("one source holds %d connections, share 4", n)
	}
	for i, c := range conns[:6] {
		if !closed(c, 5*time.Second) {
			t.Fatalf("connection %d of the source past its share is still open", i)
		}
	}
	for i, c := range conns[6:] {
		if closed(c, 50*time.Millisecond) {
			t.Fatalf("the source's newest connection %d was closed", 6+i)
		}
	}
	if _, err := open(t, "127.0.0.6", addr, false); err != nil {
		t.Fatalf("another source: %v", err)
	}
	if c := l.Counts(); c.Evicted != 6 || c.Refused != 0 {
		t.Fatalf("counts %+v, want 6 evicted", c)
	}
}

// A source at its share whose connections are all busy gets its new one
// closed at once; the busy ones go on.
func TestShareRefusesWhenNothingIdle(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	l, addr := server(t, &Options{Max: 100, PerSource: 2}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			<-release
		}
	})
	busyConns(t, l, addr, 2)
	if _, err := open(t, "127.0.0.1", addr, false); err == nil {
		t.Fatal("a third connection of a source at its share, nothing idle: answered")
	}
	if c := l.Counts(); c.Refused != 1 || c.Open != 2 {
		t.Fatalf("counts %+v, want 1 refused, 2 open", c)
	}
}

// At the total cap a new connection closes the longest-idle one that has
// not authenticated, before any authenticated one.
func TestCapClosesUnauthenticatedIdleFirst(t *testing.T) {
	l, addr := server(t, &Options{Max: 3, PerSource: 3, PreAuthIdle: time.Minute}, nil)
	authed, err := open(t, "127.0.0.7", addr, true)
	if err != nil {
		t.Fatal(err)
	}
	allIdle(t, l)
	anon1, _ := open(t, "127.0.0.8", addr, false)
	allIdle(t, l)
	anon2, _ := open(t, "127.0.0.9", addr, false)
	allIdle(t, l)
	if _, err := open(t, "127.0.0.10", addr, false); err != nil {
		t.Fatalf("a new source at the cap: %v", err)
	}
	if !closed(anon1, 5*time.Second) {
		t.Fatal("the longest-idle unauthenticated connection is still open")
	}
	if closed(authed, 50*time.Millisecond) || closed(anon2, 50*time.Millisecond) {
		t.Fatal("closed another connection than the longest-idle unauthenticated one")
	}
	allIdle(t, l)
	if _, err := open(t, "127.0.0.11", addr, false); err != nil {
		t.Fatalf("a new source at the cap: %v", err)
	}
	if !closed(anon2, 5*time.Second) || closed(authed, 50*time.Millisecond) {
		t.Fatal("the authenticated connection went before an unauthenticated one")
	}
	if c := l.Counts(); c.Open != 3 || c.Evicted != 2 {
		t.Fatalf("counts %+v", c)
	}
}

// At the cap with every connection busy, a new one waits for a slot (as
// netutil.LimitListener does) and is served once one frees: when a busy
// connection goes idle (kept alive), the waiting one closes it at once.
func TestCapWaitsWhenAllBusy(t *testing.T) {
	release := make(chan struct{})
	l, addr := server(t, &Options{Max: 2, PerSource: 3, PreAuthIdle: time.Minute}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			<-release
		}
	})
	busyConns(t, l, addr, 2)
	done := make(chan error, 1)
	go func() { _, err := open(t, "127.0.0.12", addr, false); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("served while every slot was busy: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("after a slot freed: %v", err)
	}
}

// A connection that has not authenticated is closed after PreAuthIdle;
// one that carried an authenticated request is not.
func TestPreAuthIdle(t *testing.T) {
	l, addr := server(t, &Options{PreAuthIdle: 100 * time.Millisecond}, nil)
	anon, err := open(t, "127.0.0.13", addr, false)
	if err != nil {
		t.Fatal(err)
	}
	authed, err := open(t, "127.0.0.14", addr, true)
	if err != nil {
		t.Fatal(err)
	}
	silent, _ := net.Dial("tcp", addr) // never sends a request
	t.Cleanup(func() { silent.Close() })
	if !closed(anon, 5*time.Second) {
		t.Fatal("an idle unauthenticated connection outlived PreAuthIdle")
	}
	if !closed(silent, 5*time.Second) {
		t.Fatal("a connection that sent nothing outlived PreAuthIdle")
	}
	if closed(authed, time.Second) {
		t.Fatal("an authenticated connection was closed after PreAuthIdle")
	}
	if c := l.Counts(); c.IdleShut != 2 || c.Open != 1 {
		t.Fatalf("counts %+v", c)
	}
}

// busyConns opens n connections from 127.0.0.1 whose requests (GET /busy)
// the handler holds, and waits until the server is serving all of them.
func busyConns(t *testing.T, l *Limiter, addr string, n int) {
	t.Helper()
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := io.WriteString(c, "GET /busy HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "busy connections", func() bool { return busy(l) == n })
}

// allIdle waits until the server has finished with every open
// connection's request: a reply reaches the client a moment before the
// server marks its connection idle, and which connection is the
// longest idle depends on that.
func allIdle(t *testing.T, l *Limiter) {
	t.Helper()
	waitFor(t, "every connection idle", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for c := range l.open {
			if c.state != http.StateIdle {
				return false
			}
		}
		return true
	})
}

// busy counts connections carrying a request.
func busy(l *Limiter) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for c := range l.open {
		if c.state == http.StateActive {
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
