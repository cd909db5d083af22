package feed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/web/live"
)

func newTestHub(t *testing.T) *hub {
	h := newHub()
	var wg sync.WaitGroup
	h.start(&wg)
	t.Cleanup(func() { h.shutdown(); wg.Wait() })
	return h
}

func recvWithin(t *testing.T, ch <-chan outFrame, d time.Duration) ([]byte, bool) {
	t.Helper()
	select {
	case b, ok := <-ch:
		return b.data, ok
	case <-time.After(d):
		t.Fatalf("nothing received within %v", d)
		return nil, false
	}
}

func TestHubDropsSlowClientOnly(t *testing.T) {
	h := newTestHub(t)
	fast := &wsClient{send: make(chan outFrame, sendBuffer)}
	slow := &wsClient{send: make(chan outFrame, sendBuffer)}
	if !h.register(fast) || !h.register(slow) {
		t.Fatal("register refused")
	}
	for i := range sendBuffer + 1 {
		h.broadcast([]byte(fmt.Sprint(i)))
		if b, ok := recvWithin(t, fast.send, 5*time.Second); !ok || string(b) != fmt.Sprint(i) {
			t.Fatalf("fast client got %q, %v; want %d", b, ok, i)
		}
	}
	// The fast client got the last frame, but the hub may not have reached
	// the slow client with it yet (map order); draining the slow client
	// before that would make room and keep it. The hub counts the drop
	// once it has tried, so wait for that first.
	deadline := time.Now().Add(5 * time.Second)
	for h.dropped.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
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
	if d := h.dropped.Load(); d != 1 {
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
	c := &wsClient{send: make(chan outFrame, sendBuffer)}
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

	d := &wsClient{send: make(chan outFrame, sendBuffer)}
	h.register(d)
	recvWithin(t, d.send, time.Second) // status
	h.shutdown()
	if _, ok := recvWithin(t, d.send, time.Second); ok || d.closeCode != websocket.CloseGoingAway {
		t.Errorf("after shutdown: open=%v code=%d, want closed with 1001", ok, d.closeCode)
	}
	if h.register(&wsClient{send: make(chan outFrame, 1)}) {
		t.Error("register after shutdown succeeded")
	}
	h.broadcast([]byte("x")) // must not block
	h.shutdown()             // twice is harmless
}

func TestHubNeverStarted(t *testing.T) {
	h := newHub()
	for range 200 { // more than the queue holds
		h.broadcast([]byte("x"))
	}
	if h.register(&wsClient{send: make(chan outFrame, 1)}) {
		t.Error("a hub that never ran accepted a client")
	}
	h.shutdown()
}

// A stats frame that leaves out unchanged parts reaches a viewer in full
// the first time, and as sent afterwards; other frames do not prime.
func TestHubStatsFullForNewViewers(t *testing.T) {
	h := newTestHub(t)
	old := &wsClient{send: make(chan outFrame, sendBuffer)}
	if !h.register(old) {
		t.Fatal("register refused")
	}
	fulls := 0
	full := func() []byte { fulls++; return []byte("full1") }
	h.broadcastStats([]byte("core1"), full)
	if b, _ := recvWithin(t, old.send, time.Second); string(b) != "full1" {
		t.Fatalf("first stats frame = %q, want the full one", b)
	}
	h.broadcast([]byte("event"))
	if b, _ := recvWithin(t, old.send, time.Second); string(b) != "event" {
		t.Fatalf("got %q", b)
	}
	late := &wsClient{send: make(chan outFrame, sendBuffer)}
	if !h.register(late) {
		t.Fatal("register refused")
	}
	h.broadcastStats([]byte("core2"), func() []byte { fulls++; return []byte("full2") })
	if b, _ := recvWithin(t, old.send, time.Second); string(b) != "core2" {
		t.Errorf("primed viewer got %q, want core2", b)
	}
	b, _ := recvWithin(t, late.send, time.Second)
	if string(b) != "full2" {
		t.Errorf("new viewer got %q, want full2", b)
	}
	h.broadcastStats([]byte("core3"), func() []byte { fulls++; return []byte("full3") })
	for _, c := range []*wsClient{old, late} {
		if b, _ := recvWithin(t, c.send, time.Second); string(b) != "core3" {
			t.Errorf("got %q, want core3", b)
		}
	}
	if fulls != 2 { // built only when a viewer needed it
		t.Errorf("full built %d times, want 2", fulls)
	}
	if prepare([]byte("x")).pm == nil {
		t.Error("frames are not prepared")
	}
}

// One frame built from a snapshot: the core every frame carries, the
// rarely-changing meta, and the two spliced back into the full frame.
func TestSamplerStatsFrame(t *testing.T) {
	sn := &live.Snapshot{
		At:        1000,
		Locks:     []inspect.LockInfo{{Name: "l", PTTL: -1, Kind: inspect.KindReentrant, Holders: []inspect.Holder{{ID: "u:1", Count: 2}}}},
		Limiters:  []inspect.LimiterInfo{{Name: "r", Available: 7}},
		Stats:     map[string]inspect.Summary{"r": {Window: inspect.Counts{Acquired: 3}}},
		FirstSeen: map[string]time.Time{"l": time.UnixMilli(500)},
	}
	f := buildStatsFrame(sn)
	core, err := json.Marshal(f.statsCore)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := json.Marshal(f.statsMeta)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(core, &c); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"kinds", "first_seen", "limiter_info", "holders"} {
		if _, ok := c[k]; ok {
			t.Errorf("core frame carries %s", k)
		}
	}
	for _, k := range []string{"type", "bucket_ms", "window_ms", "at", "limiters", "locks", "pttl_ms", "available"} {
		if _, ok := c[k]; !ok {
			t.Errorf("core frame lacks %s", k)
		}
	}
	var full statsFrame
	if err := json.Unmarshal(spliceMeta(core, meta), &full); err != nil {
		t.Fatal(err)
	}
	if full.Type != "stats" || full.Kinds["l"] != inspect.KindReentrant || full.FirstSeen["l"] != 500 ||
		len(full.Holders["l"]) != 1 || full.Holders["l"][0].Count != 2 || full.Limiters["r"].Acquired != 3 {
		t.Errorf("full frame = %+v", full)
	}
	if full.At != 1000 || full.LockCount != 1 || full.LimiterCount != 1 || full.PTTLMS["l"] != -1 || full.Available["r"] != 7 {
		t.Errorf("full frame counts and maps = %+v", full)
	}
	if _, ok := full.LimiterInfo["r"]; !ok {
		t.Errorf("full frame limiter_info = %v", full.LimiterInfo)
	}
	// A new tick with only the counts and lease changed has the same meta.
	sn.At, sn.Locks[0].PTTL = 1200, 900*time.Millisecond
	meta2, _ := json.Marshal(buildStatsFrame(sn).statsMeta)
	if !bytes.Equal(meta, meta2) {
		t.Errorf("meta changed with the counts: %s vs %s", meta, meta2)
	}
	sn.Locks[0].Holders[0].Count = 3
	if meta3, _ := json.Marshal(buildStatsFrame(sn).statsMeta); bytes.Equal(meta, meta3) {
		t.Error("meta did not change with the holders")
	}
}
