package inspect

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/internal/shard"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Lock events arrive on the channels lock holders publish to when they
// release. One PSUBSCRIBE per known channel family covers every lock of that
// family without knowing the names in advance; each family says how to get
// the lock name back from a channel.

// eventBuffer is how many undelivered events a stream holds before it starts
// dropping. A console tick drains it every 200 ms, so this is seconds of
// unlock storm.
const eventBuffer = 1024

// channelFamily is one pattern subscription and how to read its channels.
type channelFamily struct {
	pattern string // for PSUBSCRIBE
	prefix  string // the literal part of pattern before '*'
	typ     EventType
	// name returns the lock name encoded in the rest of the channel after
	// prefix, and the waiter a per-waiter channel addresses ("" if none).
	name func(rest string) (name, waiter string)
}

var channelFamilies = []channelFamily{
	{
		// RLock, fenced lock, and the fair lock's per-waiter channels
		// "redisson_lock__channel:{<name>}:<waiter-id>".
		pattern: wire.UnlockChannelPrefix + ":*",
		prefix:  wire.UnlockChannelPrefix + ":",
		typ:     EventUnlock,
		name:    splitWaiterChannel,
	},
	{
		// Read-write locks: "0" after the last reader, "1" after a writer.
		pattern: wire.RWLockChannelPrefix + ":*",
		prefix:  wire.RWLockChannelPrefix + ":",
		typ:     EventUnlock,
		name:    func(rest string) (string, string) { return unwrapRedissonName(rest), "" },
	},
}

// splitWaiterChannel reads the rest of a redisson_lock__channel channel: a
// lock's own channel ("{<name>}") or a fair-lock waiter's
// ("{<name>}:<uuid>:<thread>"). The waiter id is recognised by its UUID
// shape, so a lock whose name merely contains "}:" is not split.
func splitWaiterChannel(rest string) (string, string) {
	if strings.HasPrefix(rest, "{") && !strings.HasSuffix(rest, "}") {
		if i := strings.LastIndex(rest, "}:"); i > 0 && wire.IsHolderField(rest[i+2:]) {
			return unwrapRedissonName(rest[:i+1]), rest[i+2:]
		}
		// A name holding '{' is not wrapped: "<name>:<uuid>:<thread>".
	}
	if !strings.HasPrefix(rest, "{") {
		for i := strings.IndexByte(rest, ':'); i >= 0 && i < len(rest); {
			if wire.IsHolderField(rest[i+1:]) && strings.ContainsRune(rest[:i], '{') {
				return rest[:i], rest[i+1:]
			}
			j := strings.IndexByte(rest[i+1:], ':')
			if j < 0 {
				break
			}
			i += j + 1
		}
	}
	return unwrapRedissonName(rest), ""
}

// unwrapRedissonName inverts redissonPrefixName's naming: Redisson wraps a
// name in braces unless it already holds a '{'. The wrapping is ambiguous
// for a name that is itself "{x}" (its channel is the same as for "x"); the
// unwrapped name is the common case and is what this returns. A channel that
// no name maps to (no brace at all) is returned as it is, so an odd publisher
// still shows up rather than vanishing.
func unwrapRedissonName(rest string) string {
	last := len(rest) - 1
	if last >= 1 && rest[0] == '{' && rest[last] == '}' && !strings.ContainsRune(rest[1:last], '{') {
		return rest[1:last]
	}
	return rest
}

// eventFromMessage turns one pub/sub message into an Event, or false when it
// belongs to no known family.
func eventFromMessage(m *redis.Message, at time.Time) (Event, bool) {
	for _, f := range channelFamilies {
		if (m.Pattern == "" || m.Pattern == f.pattern) && strings.HasPrefix(m.Channel, f.prefix) {
			name, waiter := f.name(m.Channel[len(f.prefix):])
			return Event{
				Type:    f.typ,
				Name:    name,
				Channel: m.Channel,
				Message: m.Payload,
				At:      at,
				Waiter:  waiter,
			}, true
		}
	}
	return Event{}, false
}

// EventStream delivers lock events until closed. It never slows the
// subscription down: when the reader falls behind by more than the buffer,
// new events are dropped and counted. After a connection loss go-redis
// reconnects and subscribes again; events published while disconnected are
// lost, as with any Redis pub/sub.
type EventStream struct {
	ch    chan Event
	ps    *redis.PubSub
	shard *shard.Subs // nil unless the deployment has sharded pub/sub
	// own is the Inspector's record of the channels shard watches, for
	// its subscriber counts (subscribers.go).
	own     *atomic.Pointer[map[string]struct{}]
	cancel  context.CancelFunc // ends shard's connections
	stop    chan struct{}
	exited  chan struct{}
	dropped atomic.Int64

	stopOnce sync.Once
	psOnce   sync.Once
	psErr    error
}

// Events is the stream's channel; it is closed when the stream ends (Close,
// or the ctx given to SubscribeEvents ends).
func (s *EventStream) Events() <-chan Event { return s.ch }

// Dropped is the number of events lost because the reader was too slow.
func (s *EventStream) Dropped() int64 { return s.dropped.Load() }

// Close stops the subscription and waits for its goroutines to finish.
// Calling it again returns the first result.
func (s *EventStream) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.exited
	return s.closePubSub()
}

// Sharded reports whether the stream also listens with sharded pub/sub (a
// Cluster of Redis >= 7); only then does Watch do anything.
func (s *EventStream) Sharded() bool { return s.shard != nil }

// Watch sets the locks whose unlock channels the stream follows with
// SSUBSCRIBE on their masters (sharded channels have no patterns, so the
// stream must be told their names; the console passes what its sampler
// knows). It returns once the changed subscriptions are confirmed; a master
// that could not be reached is retried in the background and named in the
// error. Without sharded pub/sub it does nothing.
func (s *EventStream) Watch(ctx context.Context, locks []LockInfo) error {
	if s.shard == nil {
		return nil
	}
	want := lockChannels(locks)
	if !s.shard.SetWant(want) {
		return nil
	}
	s.own.Store(&want)
	return s.shard.Reconcile(ctx)
}

func (s *EventStream) closePubSub() error {
	s.psOnce.Do(func() {
		s.psErr = s.ps.Close()
		s.cancel()
		if s.shard != nil {
			s.own.Store(nil)
			s.shard.Wait()
		}
	})
	return s.psErr
}

// SubscribeEvents pattern-subscribes to every known unlock channel family and
// returns once Redis has confirmed the subscriptions, so an unlock published
// after it returns is delivered. On a Cluster of Redis >= 7 it also listens
// with sharded pub/sub to the channels given to Watch, and a message that
// arrives both ways is one event. The stream ends at Close or when ctx ends.
func (c *Inspector) SubscribeEvents(ctx context.Context) (*EventStream, error) {
	s := &EventStream{
		ch:     make(chan Event, eventBuffer),
		own:    &c.ownShard,
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	shardCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		sharded, err := wire.ShardedPubSub(ctx, cc)
		if err != nil {
			cancel()
			return nil, err
		}
		if sharded {
			s.shard = shard.New(shardCtx, cc, eventBuffer, &s.dropped)
		}
	}
	patterns := make([]string, len(channelFamilies))
	for i, f := range channelFamilies {
		patterns[i] = f.pattern
	}
	ps := c.rdb.PSubscribe(ctx, patterns...)
	for confirmed := 0; confirmed < len(patterns); {
		msg, err := ps.Receive(ctx)
		if err != nil {
			cancel()
			ps.Close()
			return nil, err
		}
		if _, ok := msg.(*redis.Subscription); ok {
			confirmed++
		}
	}
	s.ps = ps
	var sharded <-chan *redis.Message // nil: never ready
	if s.shard != nil {
		sharded = s.shard.Out()
		s.shard.Start()
	}
	go s.run(ctx, ps.Channel(), sharded)
	return s, nil
}

func (s *EventStream) run(ctx context.Context, msgs, sharded <-chan *redis.Message) {
	defer close(s.exited)
	defer close(s.ch)
	defer func() {
		s.closePubSub()
		// go-redis's reader may be blocked handing us a message; drain until
		// it sees the closed PubSub and closes msgs, so it does not linger.
		for range msgs {
		}
	}()
	dedup := shard.NewDedup(4 * eventBuffer)
	for {
		var m *redis.Message
		isSharded := false
		select {
		case <-s.stop:
			return
		case <-ctx.Done():
			return
		case m = <-sharded:
			isSharded = true
		case classic, ok := <-msgs:
			if !ok {
				return
			}
			m = classic
		}
		now := time.Now()
		ev, ok := eventFromMessage(m, now)
		if !ok {
			continue
		}
		// Only a stream that hears both ways can get two copies.
		if s.shard != nil && dedup.Duplicate(m, isSharded, now) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			s.dropped.Add(1)
		}
	}
}
