package store

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// Waiting for a lock: an ordered hand-off.
//
// Redisson's way (every waiter subscribes to the unlock channel and all of
// them race for the lock when "0" arrives) is fast but unfair: the instance
// whose waiters sit closest to Redis wins almost every race, and a waiter on
// the far instance can starve for seconds. Polling is fair but loads Redis
// with failed attempts. lockwarden queues waiters in Redis and gives the lock
// to the longest waiter in the same script that releases it:
//
//   - wire.LockQueueKey(name) is a ZSET of waiter tokens scored by arrival (Redis
//     TIME, microseconds), with one exception: a Client's tokens are
//     "<group>.<random>", and a token queued less than 3 ms after another of
//     its group is scored right behind that one, ahead of other Clients'
//     waiters that came between (lock_acquire.lua's place). A Client's
//     waiters then stand together, so a release mostly passes the lock in
//     process (lock_pass.go); nobody is passed by a waiter that came 3 ms
//     or more after it. Such a waiter's score reads up to 3 ms before its
//     arrival (the console's "waiting since"); the wait a pass records is
//     the one its Client measured. wire.LockEntriesKey(name) is a HASH token ->
//     "<deadline ms> <lease ms> <holder>". Both are "lw:{tag}:..." keys in
//     the lock's hash slot and expire with their newest entry.
//   - A waiter queues itself in an attempt that fails (lock_acquire.lua with
//     a token), after its Client confirmed the subscription to the lock's
//     channels, so no hand-off can be published before it listens. Its
//     first queueing sets the queued mark in the lock's hash
//     (wire.QueuedField): a release that finds no mark has no queue to
//     look at, and a hand-off that leaves waiters behind sets it again.
//   - The release of the last level (lock_release.lua) pops the first live
//     entry, writes that waiter's holder field with count 1 and the lease
//     its entry carries, and its hold record with the hand-off mark naming
//     its token (wire.HoldField), and publishes "<token> <next>" on
//     wire.LockWakeChannel(name) (next: the token now first in the queue),
//     then "0" on the Redisson unlock channel. When that waiter is one of
//     the releaser's own Client, it is passed the lock in process instead,
//     in the same round trip (lock_pass.go).
//     The waiter owns the lock before it hears of it. A lock never passes
//     through "free" while someone waits, so nobody can barge in.
//   - A waiter arriving less than 2.5 ms after a queued waiter of its
//     Client was sent queues nothing: it follows that waiter in process,
//     and is passed the lock in arrival order before the queue's next
//     entry (lock_follow.go). Placed by lock_acquire.lua, it would stand
//     right there anyway; the train saves its queueing attempt. A follower
//     queues itself after followMax (1 s), right behind the waiter it
//     followed while that one is queued, so waits that last are seen by
//     the console and its deadlock detection.
//   - Whoever finds the lock free while a live waiter is queued (the holder
//     was a Redisson client, or its lease ran out, or it was force-unlocked)
//     hands it to that waiter instead of taking it; TryLock does the same.
//   - An entry lives waitEntryTTL unless its waiter refreshes it with a new
//     attempt (every waitEntryTTL/3 at most), so a waiter that died is
//     skipped.
//   - When the waiter's grants need no replica acknowledgement
//     (replica_ack.go: acknowledgement off, or a master without replicas),
//     its entry carries its own full lease: the hand-off is the whole
//     grant, and the waiter returns from Lock on the message, with no
//     round trip between the release and the new holder's work. The cost:
//     a waiter that died after its last refresh can be handed the lock and
//     blocks it up to one lease, as a holder that dies does. When replicas
//     must acknowledge, the entry carries a claim of at most handoffLease
//     and the waiter confirms it before Lock returns (one renewal with its
//     own lease, sent with the WAIT), so no grant a failover could lose is
//     reported held.
//   - A lost message (pub/sub delivers at most once; a redial drops what
//     was sent meanwhile) costs a short delay, not the holder's lease: the
//     waiter's next attempt comes at most min(RetryInterval,
//     waitEntryTTL/3) later, finds the hand-off mark naming its token in
//     its hold record and returns held. A waiter that gives up withdraws its token, and
//     releases the hold if the lock was handed to it meanwhile.
//   - Each Client shares one PubSub for all its waiters: a lock's unlock and
//     hand-off channels are subscribed when its first waiter arrives and
//     unsubscribed when its last leaves, and the connection is closed after
//     it has had no waiters for waitIdleClose. A hand-off wakes only the
//     waiter whose token it names; the "0" right behind it is skipped, so it
//     costs no retries. Any other "0" wakes every waiter of the lock.
//
// Cost per contended acquisition: the failed first attempt (skipped when
// the Client already listens on the lock), the queueing attempt, the release
// that hands off, and the confirmation only when replicas must acknowledge;
// no polling. The hand-off also adds the waiter's wait since
// it queued to the lock's stats bucket (wire.BucketMS: one HMGET and one
// HSET, in the same script), and an acquire after a failed attempt
// adds what the waiter measured (wait_clock.go). A follower's acquisition
// is the pass alone: no attempt, no entry. Redisson clients on the same lock stay
// correct (they see the hash held, and "0" on every release), but they do
// not queue, so they only get the lock when no lockwarden waiter does.

// waitIdleClose keeps the PubSub connection open briefly after the last
// waiter leaves, so a lock that is contended in bursts does not dial a new
// connection for every burst.
const waitIdleClose = 10 * time.Second

// waitEntryTTL is how long a queued waiter's entry lives without a refresh;
// a waiter refreshes it at least every waitEntryTTL/3.
const waitEntryTTL = 3 * time.Second

// handoffLease caps the claim lease a hand-off sets until the waiter
// confirms; see above.
const handoffLease = 3 * time.Second

// waitReconnectPause spaces receive attempts while Redis is unreachable.
const waitReconnectPause = 100 * time.Millisecond

// lockShared is the state all lock handles of one Client share. It must not
// point back at the Client: it is reached through a weak key so that a
// Client nobody uses any more can be collected with its entry.
type lockShared struct {
	hub waitHub
	// group prefixes this Client's wait tokens ("<group>.<random>"), so
	// lock_acquire.lua queues its waiters together: a release then passes
	// the lock in process far more often (lock_pass.go).
	group string

	mu sync.Mutex
	wd watchdog // see watchdog.go
}

// sharedByClient maps weak.Pointer[Client] to *lockShared. The Client struct
// lives in another file; keeping this state beside it here avoids widening
// it for one feature.
var sharedByClient sync.Map

func sharedFor(c *Client) *lockShared {
	key := weak.Make(c)
	if v, ok := sharedByClient.Load(key); ok {
		return v.(*lockShared)
	}
	s := &lockShared{hub: waitHub{rdb: c.rdb, idleClose: waitIdleClose, followWindow: followWindow, followMax: followMax, pubsub: c.pubsub}, group: randomHex()[:8]}
	v, loaded := sharedByClient.LoadOrStore(key, s)
	if !loaded {
		runtime.AddCleanup(c, func(k weak.Pointer[Client]) {
			if v, ok := sharedByClient.LoadAndDelete(k); ok {
				v.(*lockShared).hub.closeIfIdle(nil)
			}
		}, key)
	}
	return v.(*lockShared)
}

// closeIdleWaits retires the Client's wait subscription now if nobody
// waits on it (see Close). A Client that never waited has none to retire.
func (c *Client) closeIdleWaits() {
	if v, ok := sharedByClient.Load(weak.Make(c)); ok {
		v.(*lockShared).hub.closeIfIdle(nil)
	}
}

// waitHub multiplexes the channels of every lock this Client waits on over
// one PubSub. A lock's unlock channel and hand-off channel are one group:
// they are subscribed together (one SUBSCRIBE), confirmed together and
// dropped together.
type waitHub struct {
	rdb       redis.UniversalClient
	idleClose time.Duration
	// followWindow and followMax bound a train (lock_follow.go); tests
	// widen them.
	followWindow, followMax time.Duration
	// pubsub says whether Redisson clients release with SPUBLISH only (a
	// Cluster of Redis >= 7): each lock's group then also SSUBSCRIBEs its
	// unlock channel, on a connection to the lock's master (sharded.go).
	pubsub *pubsubMode

	mu       sync.Mutex
	ps       *redis.PubSub              // nil while there is no connection
	stop     chan struct{}              // closed when ps is retired
	channels map[string]*channelWaiters // by each channel of a group
	// pending counts SUBSCRIBEs sent per channel whose confirmation has not
	// come back. A channel is only counted confirmed once its count reaches
	// zero, so a late confirmation of an earlier subscribe (followed by an
	// unsubscribe) cannot pass for the current one.
	pending map[string]int
	waiters int
	idle    *time.Timer
	// lose, set only by tests, drops the messages it reports true for, as
	// pub/sub loses what is published while a connection is down.
	lose func(channel, payload string) bool
	// Counters for tests and diagnostics.
	subscribes     int64 // SUBSCRIBE commands sent
	waits          int64 // joins, i.e. Lock calls that had to wait
	passes         int64 // local passes (lock_pass.go)
	shardedWakeUps int64 // messages received by sharded subscriptions
}

// channelWaiters is the group of one lock: its unlock channel and, for
// lockwarden's own waiters, its hand-off channel.
type channelWaiters struct {
	unlock    string
	wake      string        // "" when the group has no hand-off channel
	ready     chan struct{} // closed once Redis confirmed every channel
	isReady   bool
	confirmed int
	// skip counts hand-off messages whose "0" on the unlock channel is still
	// to come: that "0" announces a lock already given to a waiter, not a
	// free one, so it must not wake everybody (see lock_release.lua).
	skip    int
	members map[*unlockWaiter]struct{}
	// train is the latest train followers may board (lock_follow.go).
	train *train
	// sps is the group's sharded subscription to unlock (nil unless the
	// hub's deployment has sharded pub/sub), stopped by closing sstop. Its
	// confirmation counts towards ready. Every message on it wakes the
	// group: it may be the sharded copy of a hand-off's "0" (a spurious
	// wake costs an attempt) or Redisson's only announcement of a release
	// (a missed one would cost the whole wait).
	sps   *redis.PubSub
	sstop chan struct{}
}

// need is how many subscription confirmations make the group ready.
func (cw *channelWaiters) need() int {
	if cw.sps != nil {
		return len(cw.list()) + 1
	}
	return len(cw.list())
}

func (cw *channelWaiters) list() []string {
	if cw.wake == "" {
		return []string{cw.unlock}
	}
	return []string{cw.unlock, cw.wake}
}

// unlockWaiter is one blocked Lock call. C receives a value (coalesced, never
// blocking the hub) for every message that means "try again"; H receives one
// when the lock was handed to this waiter's token.
type unlockWaiter struct {
	hub   *waitHub
	group *channelWaiters
	token string
	C     chan struct{}
	H     chan struct{}
	left  bool
	// Guarded by hub.mu: next is the token a hand-off message named
	// behind this one; parked, lock, queuedAt, clock and pass are the local
	// pass (lock_pass.go).
	next     string
	parked   bool
	lock     *Lock
	queuedAt time.Time
	clock    *waitClock
	pass     *localPass
	// train is the train this waiter leads or follows (lock_follow.go):
	// it follows when it is not the train's leader.
	train *train
}

// join registers a waiter with token on a lock's unlock channel and hand-off
// channel (wake may be "") and returns once Redis has confirmed both
// subscriptions, so that any message published after join returns reaches
// the waiter. The caller must call leave.
func (h *waitHub) join(ctx context.Context, token, unlock, wake string) (*unlockWaiter, error) {
	h.mu.Lock()
	if h.idle != nil {
		h.idle.Stop()
		h.idle = nil
	}
	if h.ps == nil {
		h.open(ctx)
	}
	cw := h.channels[unlock]
	if cw == nil {
		cw = &channelWaiters{unlock: unlock, wake: wake, ready: make(chan struct{}), members: make(map[*unlockWaiter]struct{})}
		chans := cw.list()
		for _, ch := range chans {
			h.channels[ch] = cw
			h.pending[ch]++
		}
		h.subscribes++
		if h.pubsub != nil && h.pubsub.sharded() {
			cw.sps, cw.sstop = h.rdb.SSubscribe(context.WithoutCancel(ctx), unlock), make(chan struct{})
			go h.receiveSharded(context.WithoutCancel(ctx), cw, cw.sps, cw.sstop)
		}
		if err := h.ps.Subscribe(ctx, chans...); err != nil {
			cw.stopSharded()
			for _, ch := range chans {
				h.pending[ch]--
				if h.pending[ch] <= 0 {
					delete(h.pending, ch)
				}
				delete(h.channels, ch)
			}
			_ = h.ps.Unsubscribe(context.WithoutCancel(ctx), chans...)
			h.armIdle()
			h.mu.Unlock()
			return nil, err
		}
	}
	w := &unlockWaiter{hub: h, group: cw, token: token, C: make(chan struct{}, 1), H: make(chan struct{}, 1)}
	cw.members[w] = struct{}{}
	h.waiters++
	h.waits++
	ready := cw.ready
	h.mu.Unlock()

	select {
	case <-ready:
		return w, nil
	case <-ctx.Done():
		w.leave(ctx)
		return nil, ctx.Err()
	}
}

// hot reports whether the lock's group is subscribed and confirmed, i.e.
// another waiter of this Client waits on it: a new waiter can then queue
// at once without a round trip to subscribe.
func (h *waitHub) hot(unlock string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	cw := h.channels[unlock]
	return cw != nil && cw.isReady
}

// open dials nothing yet: go-redis connects on the first SUBSCRIBE. The
// receive loop outlives the ctx of the call that happened to open it.
func (h *waitHub) open(ctx context.Context) {
	if h.channels == nil {
		h.channels = make(map[string]*channelWaiters)
		h.pending = make(map[string]int)
	}
	h.ps = h.rdb.Subscribe(context.WithoutCancel(ctx))
	h.stop = make(chan struct{})
	go h.receive(context.WithoutCancel(ctx), h.ps, h.stop)
}

func (h *waitHub) receive(ctx context.Context, ps *redis.PubSub, stop chan struct{}) {
	for {
		msg, err := ps.Receive(ctx)
		select {
		case <-stop:
			return
		default:
		}
		if err != nil {
			// The connection broke. go-redis redials and resubscribes every
			// channel on the next call, but messages sent meanwhile are
			// lost: let every waiter retry now rather than at its timer.
			h.lost()
			select {
			case <-stop:
				return
			case <-time.After(waitReconnectPause):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				h.confirmed(m.Channel)
			}
		case *redis.Message:
			h.deliver(m.Channel, m.Payload)
		}
	}
}

func (h *waitHub) confirmed(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pending[channel] > 1 {
		h.pending[channel]--
		return
	}
	delete(h.pending, channel)
	if cw := h.channels[channel]; cw != nil {
		cw.confirm()
	}
}

// confirm counts one confirmation of the group's subscriptions. Callers
// hold mu.
func (cw *channelWaiters) confirm() {
	if cw.isReady {
		return
	}
	cw.confirmed++
	if cw.confirmed >= cw.need() {
		cw.isReady = true
		close(cw.ready)
	}
}

// receiveSharded reads one group's sharded subscription until the group
// is dropped. After a broken connection go-redis redials the lock's master
// (a failover's new one) and resubscribes on the next Receive.
func (h *waitHub) receiveSharded(ctx context.Context, cw *channelWaiters, sps *redis.PubSub, stop chan struct{}) {
	for {
		msg, err := sps.Receive(ctx)
		select {
		case <-stop:
			return
		default:
		}
		h.mu.Lock()
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "ssubscribe" {
				cw.confirm()
			}
		case *redis.Message:
			h.shardedWakeUps++
			if h.lose == nil || !h.lose(m.Channel, m.Payload) {
				for w := range cw.members {
					w.notify()
				}
			}
		}
		if err != nil {
			// As in lost: let the group retry now, and do not keep a
			// joiner waiting for a confirmation that may never come.
			if !cw.isReady {
				cw.isReady = true
				close(cw.ready)
			}
			for w := range cw.members {
				w.notify()
			}
		}
		h.mu.Unlock()
		if err != nil {
			select {
			case <-stop:
				return
			case <-time.After(waitReconnectPause):
			}
		}
	}
}

// stopSharded ends the group's sharded subscription, if any.
func (cw *channelWaiters) stopSharded() {
	if cw.sps == nil {
		return
	}
	close(cw.sstop)
	_ = cw.sps.Close()
	cw.sps = nil
}

// deliver routes one message. On a hand-off channel the payload is the
// token the lock was given to: only that waiter is told, and the "0" that
// follows on the unlock channel is skipped. Any other message on an unlock
// channel (a Redisson client's release, a force-unlock) wakes every waiter
// of the lock to try again; the scripts then give the lock to the first in
// line.
func (h *waitHub) deliver(channel, payload string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cw := h.channels[channel]
	if cw == nil || h.lose != nil && h.lose(channel, payload) {
		return
	}
	if channel == cw.wake {
		cw.skip++
		// "<token> <next>" (lock_release.lua), or the token alone.
		token, next, _ := strings.Cut(payload, " ")
		for w := range cw.members {
			if w.token == token {
				w.next = next
				select {
				case w.H <- struct{}{}:
				default:
				}
			}
		}
		return
	}
	if cw.skip > 0 {
		cw.skip--
		return
	}
	for w := range cw.members {
		w.notify()
	}
}

// lost wakes everyone and releases joiners still waiting for a confirmation
// that may never come (the resubscribe after a redial sends its own).
// Messages may have been lost, so no "0" after a hand-off is skipped
// either.
func (h *waitHub) lost() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.pending)
	for _, cw := range h.channels {
		if !cw.isReady {
			cw.isReady = true
			close(cw.ready)
		}
		cw.skip = 0
		for w := range cw.members {
			w.notify()
		}
	}
}

func (w *unlockWaiter) notify() {
	select {
	case w.C <- struct{}{}:
	default: // a wake-up is already pending; one is enough
	}
}

// leave unregisters w; the last waiter of a lock unsubscribes its channels.
// Safe to call more than once.
func (w *unlockWaiter) leave(ctx context.Context) {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.left {
		return
	}
	w.left = true
	h.waiters--
	cw := w.group
	delete(cw.members, w)
	if len(cw.members) == 0 {
		chans := cw.list()
		for _, ch := range chans {
			if h.channels[ch] == cw {
				delete(h.channels, ch)
			}
		}
		// A cancelled ctx would fail the write and force a redial that
		// drops other channels' messages, so the unsubscribe ignores it.
		_ = h.ps.Unsubscribe(context.WithoutCancel(ctx), chans...)
		cw.stopSharded()
	}
	h.armIdle()
}

// armIdle schedules closing the connection once nobody waits. Callers hold mu.
func (h *waitHub) armIdle() {
	if h.waiters > 0 || h.ps == nil {
		return
	}
	ps := h.ps
	h.idle = time.AfterFunc(h.idleClose, func() { h.closeIfIdle(ps) })
}

// closeIfIdle retires the PubSub if nobody waits on it. ps names the
// connection the caller saw idle (nil: whichever is open), so a stale timer
// cannot close a newer connection.
func (h *waitHub) closeIfIdle(ps *redis.PubSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters > 0 || h.ps == nil || (ps != nil && ps != h.ps) {
		return
	}
	if h.idle != nil {
		h.idle.Stop() // when Close retires it first
	}
	close(h.stop)
	_ = h.ps.Close()
	h.ps, h.stop, h.idle = nil, nil, nil
	clear(h.pending)
}
