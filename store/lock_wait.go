package store

import (
	"context"
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// Waiters in Lock sleep until an unlock message arrives on the lock's
// channel. Giving each waiter its own PubSub would cost a connection per
// blocked goroutine, so every Client has one PubSub that all its waiters
// share: a channel is subscribed when its first waiter arrives and
// unsubscribed when its last waiter leaves, and the connection itself is
// closed after it has had no waiters for waitIdleClose.

// waitIdleClose keeps the PubSub connection open briefly after the last
// waiter leaves, so a lock that is contended in bursts does not dial a new
// connection for every burst.
const waitIdleClose = 10 * time.Second

// waitReconnectPause spaces receive attempts while Redis is unreachable.
const waitReconnectPause = 100 * time.Millisecond

// lockShared is the state all lock handles of one Client share. It must not
// point back at the Client: it is reached through a weak key so that a
// Client nobody uses any more can be collected with its entry.
type lockShared struct {
	hub waitHub

	mu       sync.Mutex
	renewals map[renewKey]*renewal // see lock.go
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
	s := &lockShared{
		hub:      waitHub{rdb: c.rdb, idleClose: waitIdleClose},
		renewals: make(map[renewKey]*renewal),
	}
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

// waitHub multiplexes unlock channels over one PubSub.
type waitHub struct {
	rdb       redis.UniversalClient
	idleClose time.Duration

	mu       sync.Mutex
	ps       *redis.PubSub // nil while there is no connection
	stop     chan struct{} // closed when ps is retired
	channels map[string]*channelWaiters
	// pending counts SUBSCRIBEs sent per channel whose confirmation has not
	// come back. A channel is only reported ready once its count reaches
	// zero, so a late confirmation of an earlier subscribe (followed by an
	// unsubscribe) cannot pass for the current one.
	pending map[string]int
	waiters int
	idle    *time.Timer
	// Counters for tests and diagnostics.
	subscribes int64 // SUBSCRIBE commands sent
	waits      int64 // joins, i.e. Lock calls that had to wait
}

type channelWaiters struct {
	ready   chan struct{} // closed once Redis confirmed the subscription
	isReady bool
	members map[*unlockWaiter]struct{}
}

// unlockWaiter is one blocked Lock call. C receives a value (coalesced, never
// blocking the hub) for every message on the channel.
type unlockWaiter struct {
	hub     *waitHub
	channel string
	C       chan struct{}
	left    bool
}

// join registers a waiter on channel and returns once Redis has confirmed the
// subscription, so that any unlock published after join returns reaches C.
// The caller must call leave.
func (h *waitHub) join(ctx context.Context, channel string) (*unlockWaiter, error) {
	h.mu.Lock()
	if h.idle != nil {
		h.idle.Stop()
		h.idle = nil
	}
	if h.ps == nil {
		h.open(ctx)
	}
	w := &unlockWaiter{hub: h, channel: channel, C: make(chan struct{}, 1)}
	cw := h.channels[channel]
	if cw == nil {
		cw = &channelWaiters{ready: make(chan struct{}), members: make(map[*unlockWaiter]struct{})}
		h.channels[channel] = cw
		h.pending[channel]++
		h.subscribes++
		if err := h.ps.Subscribe(ctx, channel); err != nil {
			h.pending[channel]--
			if h.pending[channel] <= 0 {
				delete(h.pending, channel)
			}
			delete(h.channels, channel)
			_ = h.ps.Unsubscribe(context.WithoutCancel(ctx), channel)
			h.armIdle()
			h.mu.Unlock()
			return nil, err
		}
	}
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
			h.deliver(m.Channel)
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
	if cw := h.channels[channel]; cw != nil && !cw.isReady {
		cw.isReady = true
		close(cw.ready)
	}
}

func (h *waitHub) deliver(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if cw := h.channels[channel]; cw != nil {
		for w := range cw.members {
			w.notify()
		}
	}
}

// lost wakes everyone and releases joiners still waiting for a confirmation
// that may never come (the resubscribe after a redial sends its own).
func (h *waitHub) lost() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.pending)
	for _, cw := range h.channels {
		if !cw.isReady {
			cw.isReady = true
			close(cw.ready)
		}
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

// leave unregisters w; the last waiter of a channel unsubscribes it. Safe to
// call more than once.
func (w *unlockWaiter) leave(ctx context.Context) {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.left {
		return
	}
	w.left = true
	h.waiters--
	cw := h.channels[w.channel]
	delete(cw.members, w)
	if len(cw.members) == 0 {
		delete(h.channels, w.channel)
		// A cancelled ctx would fail the write and force a redial that
		// drops other channels' messages, so the unsubscribe ignores it.
		_ = h.ps.Unsubscribe(context.WithoutCancel(ctx), w.channel)
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
	close(h.stop)
	_ = h.ps.Close()
	h.ps, h.stop, h.idle = nil, nil, nil
	clear(h.pending)
}
