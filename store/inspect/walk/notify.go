package walk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/lockwarden/lockwarden/store/inspect/internal/glob"
	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"

	"github.com/redis/go-redis/v9"
)

// Keyspace notifications as discovery hints. When the server publishes
// keyevent notifications, a write to any hash (or an expiry set or a key
// deleted or expired) names its key on __keyevent@<db>__:<event>; the
// console takes those names as candidates for the walker (Walker.Suggest),
// so a lock written by a foreign client is listed within a tick or two
// instead of at the next reconciliation pass. Notifications are node-local,
// so on a Cluster every master is subscribed on its own.

// KeyEventsMode is the --keyspace-events setting: whether the walk takes
// keyspace notifications as hints (WatchKeyEvents).
type KeyEventsMode string

const (
	// KeyEventsAuto uses notifications when every node already publishes
	// the events discovery needs.
	KeyEventsAuto KeyEventsMode = "auto"
	// KeyEventsOn turns them on (CONFIG SET, adding to what is set).
	KeyEventsOn KeyEventsMode = "on"
	// KeyEventsOff never uses them.
	KeyEventsOff KeyEventsMode = "off"
)

// ParseKeyEventsMode checks a --keyspace-events value.
func ParseKeyEventsMode(s string) (KeyEventsMode, error) {
	switch m := KeyEventsMode(s); m {
	case KeyEventsAuto, KeyEventsOn, KeyEventsOff:
		return m, nil
	case "":
		return KeyEventsAuto, nil
	}
	return "", fmt.Errorf("inspect: keyspace events %q: want auto, on or off", s)
}

// keyEventNames are the events that name a candidate: hash writes (Redisson
// locks HINCRBY, token buckets HSET), expiries set or run out, deletes,
// and evictions, which the console also reports as such (a lock evicted
// under maxmemory ends its hold without anyone's release).
var keyEventNames = []string{"hset", "hincrby", "hincrbyfloat", "expire", "del", "expired", "evicted"}

// evictedEvent ends the channel of an eviction's keyevent.
const evictedEvent = ":evicted"

// maxEvicted bounds the evictions held between ticks.
const maxEvicted = 1000

// maxPendingEvents bounds the names held between ticks; past it names are
// dropped (Overflowed counts them) and the reconciliation pass finds them.
const maxPendingEvents = 10000

// KeyEvents collects the keys named by keyevent notifications.
type KeyEvents struct {
	// State says what the console does with notifications, for the status
	// page and log: "off", "on", "on (enabled by the console)", or why not.
	State string

	// Evictions says the servers publish evicted events too ("e" or "A"
	// in every node's notify-keyspace-events): without them an eviction
	// passes for an expiry.
	Evictions bool

	// evictedOf keeps the evictions of the console's names only (nil: all),
	// so a flood of other evicted keys cannot push a lock's out of the
	// bounded list and let it pass for an expiry.
	evictedOf *glob.Glob

	mu         sync.Mutex
	pending    map[string]struct{}
	evicted    []string
	overflowed int64
	received   int64
	subs       []*redis.PubSub
	wg         sync.WaitGroup
}

// WatchKeyEvents subscribes through src to keyevent notifications as mode
// says, on every master; evictions are kept for names match matches ("":
// all). It
// returns a KeyEvents whose State explains a decision not to subscribe
// (mode off, notifications off in auto mode, CONFIG refused); the error is
// for failures to talk to Redis. Close it when done.
func WatchKeyEvents(ctx context.Context, src Source, mode KeyEventsMode, match string) (*KeyEvents, error) {
	ke := &KeyEvents{pending: map[string]struct{}{}}
	if match != "" && match != "*" {
		g, err := glob.Compile(match)
		if err != nil {
			return nil, err
		}
		ke.evictedOf = g
	}
	if mode == "" {
		mode = KeyEventsAuto
	}
	if mode == KeyEventsOff {
		ke.State = "off (--keyspace-events=off)"
		return ke, nil
	}
	var mu sync.Mutex
	var enabled, missing []string
	var refused error
	evictions := true
	err := src.ForEachNode(ctx, func(ctx context.Context, node *redis.Client) error {
		flags, err := notifyFlags(ctx, node)
		if err != nil {
			if nodes.IsReplyError(err) { // CONFIG is renamed or refused (managed Redis)
				mu.Lock()
				refused = err
				mu.Unlock()
				return nil
			}
			return err
		}
		if hasKeyEventFlags(flags) {
			if !hasEvictedFlag(flags) {
				mu.Lock()
				evictions = false
				mu.Unlock()
			}
			return nil
		}
		if mode == KeyEventsAuto {
			mu.Lock()
			missing = append(missing, flags)
			mu.Unlock()
			return nil
		}
		if err := node.ConfigSet(ctx, "notify-keyspace-events", withKeyEventFlags(flags)).Err(); err != nil {
			if !nodes.IsReplyError(err) {
				return err
			}
			mu.Lock()
			refused = err
			mu.Unlock()
			return nil
		}
		mu.Lock()
		enabled = append(enabled, flags)
		mu.Unlock()
		return nil
	})
	switch {
	case err != nil:
		return nil, err
	case refused != nil && mode == KeyEventsOn:
		ke.State = "off: could not turn keyspace notifications on (" + refused.Error() + ")"
		return ke, nil
	case refused != nil:
		ke.State = "off: cannot read notify-keyspace-events (" + refused.Error() + ")"
		return ke, nil
	case len(missing) > 0:
		ke.State = fmt.Sprintf("off: the server does not publish keyevent notifications (notify-keyspace-events %q; --keyspace-events=on sets them)", missing[0])
		return ke, nil
	}
	db := 0
	if o, ok := src.Redis().(*redis.Client); ok {
		db = o.Options().DB
	}
	channels := make([]string, 0, len(keyEventNames))
	for _, ev := range keyEventNames {
		channels = append(channels, fmt.Sprintf("__keyevent@%d__:%s", db, ev))
	}
	err = src.ForEachNode(ctx, func(ctx context.Context, node *redis.Client) error {
		ps := node.Subscribe(ctx, channels...)
		if _, err := ps.Receive(ctx); err != nil { // the subscription confirmation
			ps.Close()
			return err
		}
		ke.mu.Lock()
		ke.subs = append(ke.subs, ps)
		ke.mu.Unlock()
		ke.wg.Add(1)
		go ke.collect(ps)
		return nil
	})
	if err != nil {
		ke.Close()
		return nil, err
	}
	ke.State = "on"
	ke.Evictions = evictions
	if len(enabled) > 0 {
		ke.State = "on (enabled by the console: notify-keyspace-events now includes " + keyEventFlags + ")"
	}
	return ke, nil
}

// keyEventFlags are the notify-keyspace-events classes discovery needs:
// keyevent channels, generic (del, expire), hash, expired and evicted
// events.
const keyEventFlags = "Eghxe"

// hasEvictedFlag reports whether flags publish evicted events.
func hasEvictedFlag(flags string) bool {
	return strings.Contains(flags, "e") || strings.Contains(flags, "A")
}

func notifyFlags(ctx context.Context, node redis.Cmdable) (string, error) {
	m, err := node.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		return "", err
	}
	v, ok := m["notify-keyspace-events"]
	if !ok {
		return "", errors.New("inspect: CONFIG GET notify-keyspace-events returned nothing")
	}
	return v, nil
}

// hasKeyEventFlags reports whether flags publish keyevents for hash writes
// at least ("A" is every class but m and n).
func hasKeyEventFlags(flags string) bool {
	return strings.Contains(flags, "E") && (strings.Contains(flags, "A") || strings.Contains(flags, "h"))
}

// withKeyEventFlags adds the classes discovery needs to flags.
func withKeyEventFlags(flags string) string {
	out := flags
	for _, f := range keyEventFlags {
		if !strings.ContainsRune(out, f) && !(strings.ContainsRune(out, 'A') && f != 'E') {
			out += string(f)
		}
	}
	return out
}

func (ke *KeyEvents) collect(ps *redis.PubSub) {
	defer ke.wg.Done()
	for msg := range ps.Channel() {
		ke.mu.Lock()
		ke.received++
		if strings.HasSuffix(msg.Channel, evictedEvent) && len(ke.evicted) < maxEvicted &&
			(ke.evictedOf == nil || ke.evictedOf.Match(msg.Payload)) {
			ke.evicted = append(ke.evicted, msg.Payload)
		}
		if len(ke.pending) < maxPendingEvents {
			ke.pending[msg.Payload] = struct{}{}
		} else {
			ke.overflowed++
		}
		ke.mu.Unlock()
	}
}

// Drain returns the keys named since the last Drain.
func (ke *KeyEvents) Drain() []string {
	if ke == nil {
		return nil
	}
	ke.mu.Lock()
	defer ke.mu.Unlock()
	if len(ke.pending) == 0 {
		return nil
	}
	out := make([]string, 0, len(ke.pending))
	for k := range ke.pending {
		out = append(out, k)
	}
	clear(ke.pending)
	return out
}

// DrainEvicted returns the keys evicted since the last call.
func (ke *KeyEvents) DrainEvicted() []string {
	if ke == nil {
		return nil
	}
	ke.mu.Lock()
	defer ke.mu.Unlock()
	out := ke.evicted
	ke.evicted = nil
	return out
}

// Counts returns the notifications received and the names dropped because
// too many were pending.
func (ke *KeyEvents) Counts() (received, overflowed int64) {
	if ke == nil {
		return 0, 0
	}
	ke.mu.Lock()
	defer ke.mu.Unlock()
	return ke.received, ke.overflowed
}

// Active reports whether notifications are subscribed.
func (ke *KeyEvents) Active() bool {
	if ke == nil {
		return false
	}
	ke.mu.Lock()
	defer ke.mu.Unlock()
	return len(ke.subs) > 0
}

// Close ends the subscriptions.
func (ke *KeyEvents) Close() error {
	if ke == nil {
		return nil
	}
	ke.mu.Lock()
	subs := ke.subs
	ke.subs = nil
	ke.mu.Unlock()
	for _, ps := range subs {
		ps.Close()
	}
	ke.wg.Wait()
	return nil
}
