package web

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/lockwarden/lockwarden/store"
)

func newTestHub(t *testing.T) *hub {
	h := newHub(&metrics{})
	var wg sync.WaitGroup
	h.start(&wg)
	t.Cleanup(func() { h.shutdown(); wg.Wait() })
	return h
}

func recvWithin(t *testing.T, ch <-chan []byte, d time.Duration) ([]byte, bool) {
	t.Helper()
	select {
	case b, ok := <-ch:
		return b, ok
	case <-time.After(d):
		t.Fatalf("nothing received within %v", d)
		return nil, false
	}
}

func TestHubDropsSlowClientOnly(t *testing.T) {
	h := newTestHub(t)
	fast := &wsClient{send: make(chan []byte, sendBuffer)}
	slow := &wsClient{send: make(chan []byte, sendBuffer)}
	if !h.register(fast) || !h.register(slow) {
		t.Fatal("register refused")
	}
	for i := range sendBuffer + 1 {
		h.broadcast([]byte(fmt.Sprint(i)))
		if b, ok := recvWithin(t, fast.send, 5*time.Second); !ok || string(b) != fmt.Sprint(i) {
			t.Fatalf("fast client got %q, %v; want %d", b, ok, i)
		}
	}
	// The slow client's buffer held sendBuffer frames; the next one
	// dropped it: its channel is closed after the buffered frames.
	for i := range sendBuffer {
		b, ok := recvWithin(t, slow.send, time.Second)
		if !ok || string(b) != fmt.Sprint(i) {
			t.Fatalf("slow client frame %d = %q, %v", i, b, ok)
		}
	}
	if _, ok := recvWithin(t, slow.send, time.Second); ok {
		t.Fatal("slow client still registered")
	}
	if slow.closeCode != websocket.CloseTryAgainLater {
		t.Errorf("close code %d, want %d", slow.closeCode, websocket.CloseTryAgainLater)
	}
	if d := h.m.wsDropped.Load(); d != 1 {
		t.Errorf("dropped = %d", d)
	}
	h.broadcast([]byte("after"))
	if b, _ := recvWithin(t, fast.send, time.Second); string(b) != "after" {
		t.Errorf("fast client after the drop got %q", b)
	}
}

func TestHubStatusReplayAndShutdown(t *testing.T) {
	h := newTestHub(t)
	h.broadcastStatus([]byte("down"))
	h.broadcastStatus([]byte("up"))
	c := &wsClient{send: make(chan []byte, sendBuffer)}
	if !h.register(c) {
		t.Fatal("register refused")
	}
	if b, _ := recvWithin(t, c.send, time.Second); string(b) != "up" {
		t.Errorf("new client got %q first, want the latest status", b)
	}
	h.unregister(c)
	if _, ok := recvWithin(t, c.send, time.Second); ok {
		t.Error("unregistered client's channel still open")
	}
	h.unregister(c) // twice is harmless

	d := &wsClient{send: make(chan []byte, sendBuffer)}
	h.register(d)
	recvWithin(t, d.send, time.Second) // status
	h.shutdown()
	if _, ok := recvWithin(t, d.send, time.Second); ok || d.closeCode != websocket.CloseGoingAway {
		t.Errorf("after shutdown: open=%v code=%d, want closed with 1001", ok, d.closeCode)
	}
	if h.register(&wsClient{send: make(chan []byte, 1)}) {
		t.Error("register after shutdown succeeded")
	}
	h.broadcast([]byte("x")) // must not block
	h.shutdown()             // twice is harmless
}

func TestHubNeverStarted(t *testing.T) {
	h := newHub(&metrics{})
	for range 200 { // more than the queue holds
		h.broadcast([]byte("x"))
	}
	if h.register(&wsClient{send: make(chan []byte, 1)}) {
		t.Error("a hub that never ran accepted a client")
	}
	h.shutdown()
}

func TestSamplerHistoryRing(t *testing.T) {
	h := newHistory(10)
	for i := range int64(25) {
		h.push("a", point{At: i * 200, Window: store.Counts{Acquired: i}})
	}
	// A tick that sees the same bucket again replaces, not appends.
	h.push("a", point{At: 24 * 200, Window: store.Counts{Acquired: 99}})
	r := h.recent("a", 100)
	if len(r) != 10 {
		t.Fatalf("kept %d points, want 10", len(r))
	}
	if r[0].At != 24*200 || r[0].Window.Acquired != 99 || r[9].At != 15*200 {
		t.Errorf("recent = first %+v last %+v", r[0], r[9])
	}
	// One point per second, oldest first.
	sp := h.spark("a", 3, 1000)
	if len(sp) != 2 || sp[0].Acquired != 19 || sp[1].Acquired != 99 {
		t.Errorf("spark = %+v, want windows at 3.8 s and 4.8 s", sp)
	}
	h.retain(map[string]bool{"b": true})
	if h.recent("a", 5) != nil {
		t.Error("retain kept a limiter that is gone")
	}
}

func TestSamplerStatsFrameShape(t *testing.T) {
	sn := &snapshot{
		At:       1000,
		Locks:    []store.LockInfo{{Name: "l", PTTL: -1}},
		Limiters: []store.LimiterInfo{{Name: "r", Available: 7}},
		Stats:    map[string]store.Summary{"r": {Window: store.Counts{Acquired: 3, Rejected: 1}}},
	}
	f := buildStatsFrame(sn)
	if f.Type != "stats" || f.At != 1000 || f.LockCount != 1 || f.LimiterCount != 1 {
		t.Errorf("frame = %+v", f)
	}
	if f.PTTLMS["l"] != -1 || f.Holders["l"] == nil || f.Available["r"] != 7 || f.Limiters["r"].Acquired != 3 {
		t.Errorf("frame maps = %+v", f)
	}
}
