// Package events is the console's record of lock events: the unlock
// messages Redis publishes (classic and sharded pub/sub, relayed by
// Relay), the expiries live infers and the force-unlocks admin makes. Log
// keeps the newest and when each lock was last heard of, and hands every
// event to one Sink (the feed) as it is published.
//
// It imports store/inspect only.
package events

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// LogSize is how many events the console remembers for /events.
const LogSize = 200

// Entry is one entry of the console's event log, as the websocket and
// /api/events carry it: an unlock Redis published (an inspect.Event
// relayed), an expiry live inferred, or a force-unlock the console made.
// Each type has its own field set (see MarshalJSON).
type Entry struct {
	Type    inspect.EventType
	Name    string
	Channel string // unlock
	Message string // unlock
	Holder  string // force-unlock
	At      time.Time
	// Late is a late release or renewal's record (inspect.EventLate).
	Late *inspect.LateRelease
}

// MarshalJSON writes exactly the fields of the frame's type, so a viewer
// can tell "no holder" from "holder not part of this event".
func (e Entry) MarshalJSON() ([]byte, error) {
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
	case inspect.EventLate:
		l := e.Late
		if l == nil {
			l = &inspect.LateRelease{}
		}
		return json.Marshal(struct {
			Type   inspect.EventType `json:"type"`
			Name   string            `json:"name"`
			Holder string            `json:"holder"`
			Op     string            `json:"op"`
			Next   string            `json:"next_holder"`
			At     int64             `json:"at"`
		}{e.Type, e.Name, l.Holder, l.Op, l.Next, at})
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

// Sink hears every entry Log publishes, in order.
type Sink interface {
	Logged(e Entry)
}

// Log keeps the newest events and, per lock, when the console last
// heard anything about it (live uses that to tell an expiry from a
// release it already reported).
type Log struct {
	sink Sink

	mu     sync.Mutex
	buf    []Entry // ring, len <= size
	next   int
	size   int
	lastAt map[string]time.Time // local receive time by lock name
	total  int64
}

// NewLog keeps the newest size events and hands each to sink (nil: none).
func NewLog(size int, sink Sink) *Log {
	return &Log{size: size, sink: sink, lastAt: make(map[string]time.Time)}
}

// Publish records e and hands it to the sink.
func (l *Log) Publish(e Entry) {
	l.add(e, time.Now())
	if l.sink != nil {
		l.sink.Logged(e)
	}
}

func (l *Log) add(e Entry, received time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) < l.size {
		l.buf = append(l.buf, e)
	} else {
		l.buf[l.next] = e
	}
	l.next = (l.next + 1) % l.size
	// A late release says nothing of the lock's state now: it must not
	// pass for the release of a lock that went (live's expiry check).
	if e.Type != inspect.EventLate {
		l.lastAt[e.Name] = received
	}
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

// Recent returns up to n events, newest first.
func (l *Log) Recent(n int) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n > len(l.buf) || n < 0 {
		n = len(l.buf)
	}
	out := make([]Entry, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, l.buf[(l.next-i+len(l.buf))%len(l.buf)])
	}
	return out
}

// HeardSince reports whether an event about name was received after t.
func (l *Log) HeardSince(name string, t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.lastAt[name]
	return ok && at.After(t)
}

// ForceUnlocked publishes a force-unlock the console made (one of
// web/admin's listeners).
func (l *Log) ForceUnlocked(_ context.Context, name, holder string, at time.Time) {
	l.Publish(Entry{Type: inspect.EventForceUnlock, Name: name, Holder: holder, At: at})
}

// Count is how many events were ever published.
func (l *Log) Count() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// Relay relays the lock events Redis publishes into a Log.
type Relay struct {
	insp *inspect.Inspector
	log  *Log
	logs *slog.Logger
	// locks is the console's current lock list, whose unlock channels a
	// sharded subscription must name one by one.
	locks func() []inspect.LockInfo

	redisErrors atomic.Int64
}

// NewRelay relays insp's lock events into log; locks returns the
// locks the console knows (for sharded channels, see watchShardedLocks).
func NewRelay(insp *inspect.Inspector, log *Log, locks func() []inspect.LockInfo, logger *slog.Logger) *Relay {
	return &Relay{insp: insp, log: log, locks: locks, logs: logger}
}

// RedisErrors counts failed subscriptions.
func (s *Relay) RedisErrors() int64 { return s.redisErrors.Load() }

// Run relays the store's lock events until ctx ends, resubscribing with
// backoff when the subscription fails or ends (Redis restarts).
func (s *Relay) Run(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		stream, err := s.insp.SubscribeEvents(ctx)
		if err != nil {
			s.redisErrors.Add(1)
			s.logs.Warn("subscribing to lock events", "err", err, "retry_in", backoff)
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

func (s *Relay) relayEvents(ctx context.Context, stream *inspect.EventStream) {
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
			s.log.Publish(Entry{Type: ev.Type, Name: ev.Name, Channel: ev.Channel, Message: ev.Message, At: at, Late: ev.Late})
		}
	}
}

// shardWatchEvery is how often the sharded subscriptions catch up with the
// locks the console knows: a lock found by discovery is heard from within
// about this long.
const shardWatchEvery = 500 * time.Millisecond

// watchShardedLocks keeps a sharded stream subscribed to the unlock channels
// of the locks the console knows (on a Cluster of Redis >= 7 sharded
// channels cannot be covered by a pattern). It runs beside the relay, so a
// slow master delays no event.
func (s *Relay) watchShardedLocks(ctx context.Context, stream *inspect.EventStream) {
	if !stream.Sharded() {
		return
	}
	t := time.NewTicker(shardWatchEvery)
	defer t.Stop()
	var last []inspect.LockInfo
	for {
		if locks := s.locks(); locks != nil && !sameSlice(locks, last) {
			last = locks
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			if err := stream.Watch(wctx, locks); err != nil && ctx.Err() == nil {
				s.redisErrors.Add(1)
				s.logs.Warn("subscribing to sharded unlock channels", "err", err)
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

// sameSlice: a and b are the same slice (a snapshot's, unchanged).
func sameSlice(a, b []inspect.LockInfo) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
