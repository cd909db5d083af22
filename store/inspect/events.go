package inspect

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/inspect/internal/pubsub"
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
	lateFamily, // late.go
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
			e := Event{
				Type:    f.typ,
				Name:    name,
				Channel: m.Channel,
				Message: m.Payload,
				At:      at,
				Waiter:  waiter,
			}
			if f.typ == EventLate {
				late, ok := lateEvent(name, m.Payload)
				if !ok || name == "" {
					return Event{}, false
				}
				e.Late = late
			}
			return e, true
		}
	}
	return Event{}, false
}

// EventStream delivers lock events until closed (internal/pubsub runs
// its subscriptions). It never slows the subscriptions down: when the
// reader falls behind by more than the buffer, new events are dropped and
// counted. After a connection loss go-redis reconnects and subscribes
// again; events published while disconnected are lost, as with any Redis
// pub/sub.
type EventStream struct {
	s *pubsub.Stream[Event]
	// own is the Inspector's record of the channels the sharded
	// subscriptions watch, for its subscriber counts (subscribers.go).
	own *atomic.Pointer[map[string]struct{}]
}

// Events is the stream's channel; it is closed when the stream ends (Close,
// or the ctx given to SubscribeEvents ends).
func (s *EventStream) Events() <-chan Event { return s.s.Values() }

// Dropped is the number of events lost because the reader was too slow.
func (s *EventStream) Dropped() int64 { return s.s.Dropped() }

// Close stops the subscription and waits for its goroutines to finish.
// Calling it again returns the first result.
func (s *EventStream) Close() error { return s.s.Close() }

// Sharded reports whether the stream also listens with sharded pub/sub (a
// Cluster of Redis >= 7); only then does Watch do anything.
func (s *EventStream) Sharded() bool { return s.s.Shard() != nil }

// Watch sets the locks whose unlock channels the stream follows with
// SSUBSCRIBE on their masters (sharded channels have no patterns, so the
// stream must be told their names; the console passes what its sampler
// knows). It returns once the changed subscriptions are confirmed; a master
// that could not be reached is retried in the background and named in the
// error. Without sharded pub/sub it does nothing.
func (s *EventStream) Watch(ctx context.Context, locks []LockInfo) error {
	sh := s.s.Shard()
	if sh == nil {
		return nil
	}
	want := lockChannels(locks)
	if !sh.SetWant(want) {
		return nil
	}
	s.own.Store(&want)
	return sh.Reconcile(ctx)
}

// SubscribeEvents pattern-subscribes to every known unlock channel family and
// returns once Redis has confirmed the subscriptions, so an unlock published
// after it returns is delivered. On a Cluster of Redis >= 7 it also listens
// with sharded pub/sub to the channels given to Watch, and a message that
// arrives both ways is one event. The stream ends at Close or when ctx ends.
func (c *Inspector) SubscribeEvents(ctx context.Context) (*EventStream, error) {
	var sharded *redis.ClusterClient
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		yes, err := wire.ShardedPubSub(ctx, cc)
		if err != nil {
			return nil, err
		}
		if yes {
			sharded = cc
		}
	}
	patterns := make([]string, len(channelFamilies))
	for i, f := range channelFamilies {
		patterns[i] = f.pattern
	}
	es := &EventStream{own: &c.ownShard}
	closed := func() {
		if sharded != nil {
			es.own.Store(nil)
		}
	}
	s, err := pubsub.Open(ctx, c.rdb, patterns, sharded, eventBuffer, eventFromMessage, closed)
	if err != nil {
		return nil, err
	}
	es.s = s
	return es, nil
}

// Sharded pub/sub. On a Cluster of Redis >= 7 Redisson publishes unlocks
// with SPUBLISH, which only a sharded subscriber on the master of the
// channel's slot receives, and sharded channels have no pattern form: the
// event stream follows the unlock channels of the locks the sampler knows
// (EventStream.Watch) with one SSUBSCRIBE connection per master
// (internal/shard), and the console's own releases publish both ways.

// pubsubFlag is the release scripts' ARGV flag, "1" when unlock messages
// must also go out with SPUBLISH (Redisson >= 3.22 waits with SSUBSCRIBE on
// a Cluster of Redis >= 7), decided once per Inspector with one INFO. A
// failure decides nothing and is returned before any script is sent.
func (c *Inspector) pubsubFlag(ctx context.Context) (string, error) {
	switch c.pubsub.Load() {
	case 1:
		return "0", nil
	case 2:
		return "1", nil
	}
	sharded, err := wire.ShardedPubSub(ctx, c.rdb)
	if err != nil {
		return "", fmt.Errorf("inspect: reading the Redis topology (INFO): %w", err)
	}
	if sharded {
		c.pubsub.Store(2)
		return "1", nil
	}
	c.pubsub.Store(1)
	return "0", nil
}

// lockChannels are the channels a release or force-unlock of locks is
// announced on: each lock's own channel and, for a fair lock, the channel
// of every waiter shown (Redisson wakes the next waiter on its own one,
// "<lock channel>:<waiter id>"). store's queued waiters are woken on the
// hand-off channel with PUBLISH, which no sharded subscription hears:
// left out, so their coming and going rebuilds no subscription.
func lockChannels(locks []LockInfo) map[string]struct{} {
	out := make(map[string]struct{}, len(locks))
	for _, l := range locks {
		if l.Channel == "" {
			continue
		}
		out[l.Channel] = struct{}{}
		for _, w := range l.Waiters {
			if strings.HasPrefix(w.Channel, l.Channel+":") {
				out[w.Channel] = struct{}{}
			}
		}
	}
	return out
}
