package inspect

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// Every name that wire.UnlockChannel can produce unambiguously comes back out.
func TestEventsChannelNameRoundTrip(t *testing.T) {
	names := []string{
		"orders", "a:b:c", "锁", "ключ🔒 with spaces", "a{b}c", "{tag}rest", "x}y", "a{", "}",
		"a{}b", "{a}{b}", "{", "{{x}}", "{a{b}", "", "braces at end {x}",
	}
	for _, name := range names {
		ch := wire.UnlockChannel(name)
		ev, ok := eventFromMessage(&redis.Message{Channel: ch, Pattern: "redisson_lock__channel:*", Payload: "0"}, time.Time{})
		if !ok || ev.Name != name || ev.Type != EventUnlock || ev.Channel != ch || ev.Message != "0" {
			t.Errorf("name %q -> channel %q -> event %+v (ok %v)", name, ch, ev, ok)
		}
	}
	// "{x}" and "x" share a channel; the common unwrapped reading wins.
	if got := unwrapRedissonName("{x}"); got != "x" {
		t.Errorf("unwrap({x}) = %q, want x", got)
	}
	if _, ok := eventFromMessage(&redis.Message{Channel: "other:{x}", Pattern: "other:*"}, time.Time{}); ok {
		t.Error("a message from an unknown channel family became an event")
	}
}

func eventsWait(t *testing.T, s *EventStream, within time.Duration) Event {
	t.Helper()
	select {
	case ev, ok := <-s.Events():
		if !ok {
			t.Fatal("event stream closed")
		}
		return ev
	case <-time.After(within):
		t.Fatalf("no event within %v", within)
	}
	return Event{}
}

func TestEventsUnlockMessages(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	s, err := New(redistest.UniversalFor(t, rdb), nil).SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	names := []string{p + "orders", p + "锁 {tag} ключ", p + "plain ünïcödé 🔒"}
	for i, name := range names {
		before := time.Now()
		payload := []string{"0", "1", "0"}[i]
		if err := rdb.Publish(ctx, wire.UnlockChannel(name), payload).Err(); err != nil {
			t.Fatal(err)
		}
		ev := eventsWait(t, s, 5*time.Second)
		want := Event{Type: EventUnlock, Name: name, Channel: wire.UnlockChannel(name), Message: payload}
		at := ev.At
		ev.At = time.Time{}
		if ev != want {
			t.Errorf("event = %+v, want %+v", ev, want)
		}
		if at.Before(before) {
			t.Errorf("At = %v, before the publish at %v", at, before)
		}
	}
	// Other channels are not subscribed to.
	rdb.Publish(ctx, "redisson_semaphore:{"+p+"x}", "0")
	rdb.Publish(ctx, p+"unrelated", "0")
	rdb.Publish(ctx, wire.UnlockChannel(p+"last"), "0")
	if ev := eventsWait(t, s, 5*time.Second); ev.Name != p+"last" {
		t.Errorf("got %+v, want only the unlock of %slast", ev, p)
	}
	if s.Dropped() != 0 {
		t.Errorf("Dropped = %d, want 0", s.Dropped())
	}
}

// A reader that does not keep up loses the newest events instead of
// stalling the subscription, and the loss is counted.
func TestEventsSlowReaderDrops(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	p := redistest.Prefix(t)
	s, err := New(redistest.UniversalFor(t, rdb), nil).SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const extra = 50
	pipe := rdb.Pipeline()
	for i := 0; i < eventBuffer+extra; i++ {
		pipe.Publish(ctx, wire.UnlockChannel(p+"hot"), "0")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Dropped() < extra && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := s.Dropped(); got != extra {
		t.Fatalf("Dropped = %d, want %d", got, extra)
	}
	if got := len(s.Events()); got != eventBuffer {
		t.Fatalf("buffered %d events, want %d", got, eventBuffer)
	}
	// The stream still works once the reader catches up.
	for i := 0; i < eventBuffer; i++ {
		<-s.Events()
	}
	rdb.Publish(ctx, wire.UnlockChannel(p+"after"), "0")
	if ev := eventsWait(t, s, 5*time.Second); ev.Name != p+"after" {
		t.Errorf("after catching up got %+v", ev)
	}
}

// go-redis reconnects and subscribes again after the server restarts; the
// stream carries on without the caller doing anything.
func TestEventsSurviveRestart(t *testing.T) {
	srv := redistest.StartT(t)
	rdb := redistest.NewClient(t, srv)
	ctx := context.Background()
	s, err := New(redistest.UniversalFor(t, rdb), nil).SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	if err := rdb.Publish(ctx, wire.UnlockChannel("before"), "0").Err(); err != nil {
		t.Fatal(err)
	}
	if ev := eventsWait(t, s, 5*time.Second); ev.Name != "before" {
		t.Fatalf("got %+v", ev)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// Wait (bounded) for the re-subscription to reach the new server.
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := rdb.Do(ctx, "PUBSUB", "NUMPAT").Int64()
		if err == nil && n >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pattern subscription on the restarted server (NUMPAT %d, %v)", n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := rdb.Publish(ctx, wire.UnlockChannel("after {restart}"), "0").Err(); err != nil {
		t.Fatal(err)
	}
	if ev := eventsWait(t, s, 5*time.Second); ev.Name != "after {restart}" {
		t.Fatalf("after restart got %+v", ev)
	}
}

// Close ends the stream, closes Events and leaves no goroutines behind.
func TestEventsCloseNoLeak(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// The client's own goroutines are not the subscription's: on a Cluster
	// go-redis starts them per node as nodes are first used, so one round
	// runs before the baseline is taken.
	c := New(redistest.UniversalFor(t, rdb), nil)
	warm, err := c.SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdb.Publish(ctx, wire.UnlockChannel("leak"), "0")
	eventsWait(t, warm, 5*time.Second)
	if err := warm.Close(); err != nil {
		t.Fatal(err)
	}
	drained := make(chan struct{})
	go func() {
		for range warm.Events() { // closed once its goroutines are done
		}
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("Events not closed by Close")
	}
	runtime.GC()
	baseline := runtime.NumGoroutine()

	for round := 0; round < 3; round++ {
		s, err := c.SubscribeEvents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rdb.Publish(ctx, wire.UnlockChannel("leak"), "0")
		eventsWait(t, s, 5*time.Second)
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		select {
		case _, ok := <-s.Events():
			if ok {
				t.Fatal("event delivered after Close")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Events not closed by Close")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%d goroutines after Close, baseline %d:\n%s", n, baseline, buf)
	}
}

// The stream also ends with the ctx it was opened with.
func TestEventsEndWithContext(t *testing.T) {
	rdb := redistest.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(redistest.UniversalFor(t, rdb), nil).SubscribeEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case _, ok := <-s.Events():
		if ok {
			t.Fatal("unexpected event")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end with its context")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close after ctx end: %v", err)
	}
	// The server drops the subscription when it sees the connection close.
	var n int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if n, err = rdb.Do(context.Background(), "PUBSUB", "NUMPAT").Int64(); err == nil && n == 0 {
			return
		}
	}
	t.Errorf("NUMPAT after the stream ended = %d, %v; want 0", n, err)
}

func TestEventsSubscribeFailsWhenRedisIsDown(t *testing.T) {
	srv := redistest.StartT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s, err := New(redistest.UniversalFor(t, rdb), nil).SubscribeEvents(ctx); err == nil {
		s.Close()
		t.Fatal("SubscribeEvents against a stopped server returned no error")
	}
}
