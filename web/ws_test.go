package web

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/lockwarden/lockwarden/web/events"
)

func TestWSStatsFrames(t *testing.T) {
	e := newEnv(t, nil)
	lim := e.prefix + "rl:ws"
	e.makeBucket(lim, 10, "1000")
	lock := e.prefix + "lock:ws"
	e.makeLock(lock, "w", 2, time.Minute)

	c, _, err := e.dialWS(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Discovery runs every second, so the objects show up within a couple.
	// Holders come only in frames where they (or kinds, first_seen,
	// limiter_info) changed, and in the first stats frame: keep the latest.
	var holders any
	nums := statsNumbers{}
	keep := func(f frame) {
		if h, ok := f["holders"]; ok && f.typ() == "stats" {
			holders = h
		}
		if f.typ() == "stats" {
			nums.apply(t, f)
		}
	}
	readFrames(t, c, 5*time.Second, func(f frame) bool {
		keep(f)
		return f.typ() == "stats" && f["lock_count"] == float64(1) && f["limiter_count"] == float64(1)
	})

	start := time.Now()
	frames := readFrames(t, c, 2*time.Second, nil)
	elapsed := time.Since(start)
	stats := 0
	var last frame
	for _, f := range frames {
		if f.typ() == "stats" {
			stats++
			last = f
			keep(f)
		}
	}
	// 5 per second; accept 7 in 2 s for a loaded machine.
	if stats < 7 {
		t.Fatalf("%d stats frames in %v, want >= 7", stats, elapsed)
	}
	if last["bucket_ms"] != float64(200) || last["window_ms"] != float64(1000) {
		t.Errorf("frame header: %v", last)
	}
	if at, _ := last["at"].(float64); int64(at)%200 != 0 || at == 0 {
		t.Errorf("at = %v, want a bucket boundary", last["at"])
	}
	if _, ok := nums["limiters"][lim]; !ok {
		t.Errorf("limiter missing from frames: %v", nums["limiters"])
	}
	if av := nums["available"][lim]; av != float64(10) {
		t.Errorf("available = %v, want 10", av)
	}
	pttl, _ := nums["pttl_ms"][lock].(float64)
	if pttl <= 0 || pttl > 60000 {
		t.Errorf("pttl_ms = %v", pttl)
	}
	hs, _ := holders.(map[string]any)[lock].([]any)
	if len(hs) != 1 || hs[0].(map[string]any)["id"] != holderID("w") || hs[0].(map[string]any)["count"] != float64(2) {
		t.Errorf("holders = %v", holders)
	}
}

// statsNumbers is what a viewer knows after applying stats frames: a full
// frame replaces it, a delta frame (delta: true) adds what changed and
// drops what was removed.
type statsNumbers map[string]map[string]any

func (n statsNumbers) apply(t *testing.T, f frame) {
	t.Helper()
	fields := []string{"limiters", "locks", "available", "pttl_ms"}
	if f["delta"] != true {
		for _, k := range fields {
			n[k] = map[string]any{}
		}
	} else if n["limiters"] == nil {
		t.Fatalf("a delta frame before any full frame: %v", f)
	}
	if f["delta"] == true {
		rm, _ := f["removed"].([]any)
		for _, name := range rm {
			for _, k := range fields {
				delete(n[k], name.(string))
			}
		}
	}
	for _, k := range fields {
		m, _ := f[k].(map[string]any)
		for name, v := range m {
			n[k][name] = v
		}
	}
}

func TestWSStatusOnConnect(t *testing.T) {
	e := newEnv(t, nil)
	// Let the first tick decide the status.
	eventually(t, 5*time.Second, "the first sample", func() bool { return e.srv.live.Latest() != nil })
	c, _, err := e.dialWS(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fs := readFrames(t, c, 3*time.Second, func(f frame) bool { return f.typ() == "status" })
	if len(fs) == 0 || fs[len(fs)-1].typ() != "status" {
		t.Fatalf("no status frame: %v", fs)
	}
	if st := fs[len(fs)-1]; st["redis"] != "up" || st["at"] == nil {
		t.Errorf("status frame = %v", st)
	}
	if fs[0].typ() != "status" {
		t.Errorf("first frame is %q, want status", fs[0].typ())
	}
}

// waitSubscribed waits until this console relays unlock messages to c, so
// a PUBLISH cannot race its subscription: it publishes on a probe lock's
// channel until the frame arrives. (Counting PUBSUB NUMPAT cannot tell
// this console's subscription from another's still closing.)
func (e *testEnv) waitSubscribed(c *websocket.Conn) {
	e.t.Helper()
	probe := e.prefix + "subscription-probe"
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			e.rdb.Publish(context.Background(), redistest.UnlockChannel(probe), "0")
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	defer close(stop)
	heard := func(f frame) bool { return f.typ() == "unlock" && f["name"] == probe }
	if fs := readFrames(e.t, c, 5*time.Second, heard); len(fs) == 0 || !heard(fs[len(fs)-1]) {
		e.t.Fatal("the console relays no unlock message")
	}
}

func TestWSUnlockEvent(t *testing.T) {
	e := newEnv(t, nil)
	c, _, err := e.dialWS(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e.waitSubscribed(c)

	name := e.prefix + "released"
	ch := redistest.UnlockChannel(name)
	if err := e.rdb.Publish(context.Background(), ch, "0").Err(); err != nil {
		t.Fatal(err)
	}
	published := time.Now()
	fs := readFrames(t, c, time.Second, func(f frame) bool { return f.typ() == "unlock" && f["name"] == name })
	if len(fs) == 0 || fs[len(fs)-1]["name"] != name {
		t.Fatalf("no unlock frame within 1 s of PUBLISH (%d frames)", len(fs))
	}
	f := fs[len(fs)-1]
	if f["channel"] != ch || f["message"] != "0" {
		t.Errorf("unlock frame = %v", f)
	}
	if at, _ := f["at"].(float64); int64(at) < published.Add(-5*time.Second).UnixMilli() {
		t.Errorf("at = %v, want epoch ms near now", f["at"])
	}
	var evs struct{ Events []map[string]any }
	e.getJSON("/api/events", 200, &evs)
	if len(evs.Events) == 0 || evs.Events[0]["name"] != name {
		t.Errorf("newest event = %v, want the unlock of %q", evs.Events, name)
	}
}

func TestWSExpiredEvent(t *testing.T) {
	e := newEnv(t, nil)
	name := e.prefix + "lease"
	e.makeLock(name, "w", 1, time.Minute)
	gone := e.prefix + "released"
	e.makeLock(gone, "w", 1, time.Minute)
	c, _, err := e.dialWS(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e.waitSubscribed(c)
	readFrames(t, c, 5*time.Second, func(f frame) bool { return f.typ() == "stats" && f["lock_count"] == float64(2) })

	// One lease runs out; the other is released with an unlock message,
	// which must not also be reported as an expiry.
	e.rdb.PExpire(context.Background(), name, 50*time.Millisecond)
	e.rdb.Del(context.Background(), gone)
	e.rdb.Publish(context.Background(), redistest.UnlockChannel(gone), "0")

	var got []frame
	readFrames(t, c, 5*time.Second, func(f frame) bool {
		if f.typ() == "expired" || f.typ() == "unlock" {
			got = append(got, f)
		}
		return f.typ() == "expired" && f["name"] == name
	})
	// Give a wrongly reported expiry of "gone" time to show up too.
	readFrames(t, c, 800*time.Millisecond, func(f frame) bool {
		if f.typ() == "expired" {
			got = append(got, f)
		}
		return false
	})
	var expired, unlocked []string
	for _, f := range got {
		n, _ := f["name"].(string)
		if f.typ() == "expired" {
			expired = append(expired, n)
		} else {
			unlocked = append(unlocked, n)
		}
	}
	if len(expired) != 1 || expired[0] != name {
		t.Errorf("expired events for %v, want exactly [%s]", expired, name)
	}
	if len(unlocked) != 1 || unlocked[0] != gone {
		t.Errorf("unlock events for %v, want [%s]", unlocked, gone)
	}
}

func TestWSSlowClientDropped(t *testing.T) {
	e := newEnv(t, nil)
	// A small receive buffer makes the slow client's socket fill quickly.
	slowDialer := &websocket.Dialer{
		HandshakeTimeout: 5 * time.Second,
		NetDial: func(network, addr string) (net.Conn, error) {
			conn, err := net.Dial(network, addr)
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(4096)
			}
			return conn, err
		},
	}
	slow, _, err := e.dialWS(nil, slowDialer)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close() // never read
	normal, _, err := e.dialWS(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer normal.Close()
	eventually(t, 5*time.Second, "two registered clients", func() bool { return e.srv.feed.Counts().Clients == 2 })

	// Frames far larger than stats frames fill the slow client's socket
	// buffers within a few dozen; the normal client reads each one before
	// the next is sent, so it is never behind.
	big := events.Entry{Type: inspect.EventExpired, Name: strings.Repeat("x", 256<<10)}
	for i := 0; i < 1000 && e.srv.feed.Counts().Dropped == 0; i++ {
		e.srv.feed.Logged(big)
		if !readUntilType(t, normal, string(inspect.EventExpired), 10*time.Second) {
			t.Fatalf("normal client stopped receiving after %d big frames", i)
		}
	}
	if d := e.srv.feed.Counts().Dropped; d != 1 {
		t.Fatalf("dropped = %d, want 1", d)
	}
	if n := e.srv.feed.Counts().Clients; n != 1 {
		t.Errorf("clients = %d, want 1", n)
	}
	// The survivor keeps getting stats frames.
	fs := readFrames(t, normal, 3*time.Second, func(f frame) bool { return f.typ() == "stats" })
	if len(fs) == 0 || fs[len(fs)-1].typ() != "stats" {
		t.Fatal("normal client got no stats frame after the drop")
	}
	_, _, b := e.do("GET", "/metrics", nil, nil)
	if !bytes.Contains(b, []byte("lockwarden_ws_dropped_total 1\n")) {
		t.Errorf("metrics do not count the drop:\n%s", b)
	}
}

// readUntilType reads until a frame whose type is typ; false on timeout.
func readUntilType(t *testing.T, c *websocket.Conn, typ string, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	want := []byte(`{"type":"` + typ + `"`)
	for i := 0; i < 10000; i++ {
		_ = c.SetReadDeadline(deadline)
		_, b, err := c.ReadMessage()
		if err != nil {
			return false
		}
		if bytes.HasPrefix(b, want) {
			return true
		}
	}
	return false
}

func TestWSOriginChecked(t *testing.T) {
	e := newEnv(t, nil)
	_, resp, err := e.dialWS(http.Header{"Origin": {"http://evil.example"}}, nil)
	if err == nil {
		t.Fatal("cross-origin websocket accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin: response %v, want 403", resp)
	}
	c, _, err := e.dialWS(http.Header{"Origin": {e.srv.URL()}}, nil)
	if err != nil {
		t.Fatalf("same-origin websocket refused: %v", err)
	}
	c.Close()
	st, _, _ := e.do("GET", "/ws", nil, nil)
	if st != 400 {
		t.Errorf("plain GET /ws: status %d, want 400", st)
	}
}

func TestServerCloseGoingAway(t *testing.T) {
	e := newEnv(t, nil)
	c, _, err := e.dialWS(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	readFrames(t, c, 3*time.Second, func(f frame) bool { return f.typ() == "stats" })

	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- e.srv.Close() }()
	var ce *websocket.CloseError
	for i := 0; i < 1000; i++ {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, _, err = c.ReadMessage(); err != nil {
			break
		}
	}
	if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Errorf("client saw %v, want close 1001", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10 s")
	}
	if d := time.Since(start); d > 7*time.Second {
		t.Errorf("Close took %v, bound is 5 s", d)
	}
	if _, err := http.Get(e.srv.URL() + "/healthz"); err == nil {
		t.Error("server still answers after Close")
	}
	if err := e.srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
