package web

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// eventLogSize is how many events the console remembers for /events.
const eventLogSize = 200

// eventFrame is one lock event as the websocket and /api/events carry it.
// Each type has its own field set (see MarshalJSON).
type eventFrame struct {
	Type    inspect.EventType
	Name    string
	Channel string // unlock
	Message string // unlock
	Holder  string // force-unlock
	At      time.Time
}

// MarshalJSON writes exactly the fields of the frame's type, so a viewer
// can tell "no holder" from "holder not part of this event".
func (e eventFrame) MarshalJSON() ([]byte, error) {
	at := e.At.UnixMilli()
	switch e.Type {
	case inspect.EventUnlock:
		return json.Marshal(struct {
			Type    inspect.EventType `json:"type"`
			Name    string            `json:"name"`
			Channel string            `json:"channel"`
			Message string            `json:"message"`
			At      int64             `json:"at"`
		}{e.Type, e.Name, e.Channel, e.Message, at})
	case inspect.EventForceUnlock:
		return json.Marshal(struct {
			Type   inspect.EventType `json:"type"`
			Name   string            `json:"name"`
			Holder string            `json:"holder"`
			At     int64             `json:"at"`
		}{e.Type, e.Name, e.Holder, at})
	default:
		return json.Marshal(struct {
			Type inspect.EventType `json:"type"`
			Name string            `json:"name"`
			At   int64             `json:"at"`
		}{e.Type, e.Name, at})
	}
}

// eventLog keeps the newest events and, per lock, when the console last
// heard anything about it (the sampler uses that to tell an expiry from a
// release it already reported).
type eventLog struct {
	mu     sync.Mutex
	buf    []eventFrame // ring, len <= size
	next   int
	size   int
	lastAt map[string]time.Time // local receive time by lock name
	total  int64
}

func newEventLog(size int) *eventLog {
	return &eventLog{size: size, lastAt: make(map[string]time.Time)}
}

func (l *eventLog) add(e eventFrame, received time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) < l.size {
		l.buf = append(l.buf, e)
	} else {
		l.buf[l.next] = e
	}
	l.next = (l.next + 1) % l.size
	l.lastAt[e.Name] = received
	l.total++
	// Forget locks whose last event has scrolled far out of view, so a
	// stream of unique lock names cannot grow the map without bound.
	if len(l.lastAt) > 4*l.size {
		cutoff := received.Add(-time.Minute)
		for k, t := range l.lastAt {
			if t.Before(cutoff) {
				delete(l.lastAt, k)
			}
		}
	}
}

// recent returns up to n events, newest first.
func (l *eventLog) recent(n int) []eventFrame {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > len(l.buf) || n < 0 {
		n = len(l.buf)
	}
	out := make([]eventFrame, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, l.buf[(l.next-i+len(l.buf))%len(l.buf)])
	}
	return out
}

// heardSince reports whether an event about name was received after t.
func (l *eventLog) heardSince(name string, t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.lastAt[name]
	return ok && at.After(t)
}

func (l *eventLog) count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// publishEvent records e and sends it to every viewer.
func (s *Server) publishEvent(e eventFrame) {
	s.events.add(e, time.Now())
	frame, err := json.Marshal(e)
	if err != nil {
		s.log.Error("encoding event frame", "err", err)
		return
	}
	s.hub.broadcast(frame)
}

// listenEvents relays the store's lock events until ctx ends, resubscribing
// with backoff when the subscription fails or ends (Redis restarts).
func (s *Server) listenEvents(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		stream, err := s.insp.SubscribeEvents(ctx)
		if err != nil {
			s.metrics.redisErrors.Add(1)
			s.log.Warn("subscribing to lock events", "err", err, "retry_in", backoff)
			if !sleepCtx(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		watchCtx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() { defer close(watched); s.watchShardedLocks(watchCtx, stream) }()
		s.relayEvents(ctx, stream)
		stopWatch()
		<-watched
		if ctx.Err() != nil {
			// Shutting down: the stream ends with ctx anyway, and waiting
			// for its goroutines must not hold up Close.
			go stream.Close()
			return
		}
		_ = stream.Close()
		// A stream that ends at once (Redis going away) must not turn
		// this loop into a busy spin.
		if !sleepCtx(ctx, backoff) {
			return
		}
	}
}

func (s *Server) relayEvents(ctx context.Context, stream *inspect.EventStream) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-stream.Events():
			if !ok {
				return
			}
			at := ev.At
			if at.IsZero() {
				at = time.Now()
			}
			s.publishEvent(eventFrame{Type: ev.Type, Name: ev.Name, Channel: ev.Channel, Message: ev.Message, At: at})
		}
	}
}

// shardWatchEvery is how often the sharded subscriptions catch up with the
// locks the sampler knows: a lock found by discovery is heard from within
// about this long.
const shardWatchEvery = 500 * time.Millisecond

// watchShardedLocks keeps a sharded stream subscribed to the unlock channels
// of the locks in the latest snapshot (on a Cluster of Redis >= 7 sharded
// channels cannot be covered by a pattern). It runs beside the relay, so a
// slow master delays no event.
func (s *Server) watchShardedLocks(ctx context.Context, stream *inspect.EventStream) {
	if !stream.Sharded() {
		return
	}
	t := time.NewTicker(shardWatchEvery)
	defer t.Stop()
	var last *snapshot
	for {
		if sn := s.sampler.latest(); sn != nil && sn != last {
			last = sn
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			if err := stream.Watch(wctx, sn.Locks); err != nil && ctx.Err() == nil {
				s.metrics.redisErrors.Add(1)
				s.log.Warn("subscribing to sharded unlock channels", "err", err)
			}
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sleepCtx sleeps for d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// consoleEvents tells viewers and the event log of the locks admin broke.
type consoleEvents struct{ s *Server }

func (e consoleEvents) ForceUnlocked(name, holder string, at time.Time) {
	e.s.publishEvent(eventFrame{Type: inspect.EventForceUnlock, Name: name, Holder: holder, At: at})
}
