// Package pubsub is the console's subscriptions: a Stream of the messages
// of pattern subscriptions and, on a Cluster of Redis >= 7, of sharded
// channels. Redisson publishes unlocks there with SPUBLISH, which only a
// sharded subscriber on the master of the channel's slot receives, and
// sharded channels have no pattern form. So the stream subscribes by name:
// one SSUBSCRIBE connection per master (Subs), carrying the channels it is
// told (SetWant), rebuilt when that set changes, a slot moves (Redis then
// sends sunsubscribe for its channels) or a node's connection fails (a
// failover). A message published both ways comes twice; Dedup drops the
// second copy. Package inspect's event stream is one.
package pubsub

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// reconcileEvery is how often the subscriptions are checked against
// the Cluster client's slot map, which ReloadState refreshes after errors.
const reconcileEvery = time.Second

// Subs is the set of per-master sharded subscriptions of one stream.
type Subs struct {
	cc   *redis.ClusterClient
	ctx  context.Context // ends with the stream
	out  chan *redis.Message
	kick chan struct{}

	dropped *atomic.Int64
	wg      sync.WaitGroup

	mu    sync.Mutex // serialises Reconcile
	want  map[string]struct{}
	nodes map[string]*nodeSub // by master address
}

// nodeSub is one master's SSUBSCRIBE connection.
type nodeSub struct {
	ps   *redis.PubSub
	sig  string // its channels, sorted and joined: rebuilt when they change
	dead atomic.Bool
	done chan struct{}
}

// New is the subscriptions of a stream whose connections end with ctx: a
// message that does not fit in buffer is dropped and counted in dropped.
func New(ctx context.Context, cc *redis.ClusterClient, buffer int, dropped *atomic.Int64) *Subs {
	return &Subs{
		cc:      cc,
		ctx:     ctx,
		out:     make(chan *redis.Message, buffer),
		kick:    make(chan struct{}, 1),
		dropped: dropped,
		want:    map[string]struct{}{},
		nodes:   map[string]*nodeSub{},
	}
}

// SetWant replaces the channel set; true if it changed.
func (s *Subs) SetWant(want map[string]struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(want) == len(s.want) {
		same := true
		for ch := range want {
			if _, ok := s.want[ch]; !ok {
				same = false
				break
			}
		}
		if same {
			return false
		}
	}
	s.want = want
	return true
}

// Reconcile makes the per-master subscriptions match the wanted channels
// under the Cluster client's current slot map. A node that fails keeps
// being retried (next Reconcile) while the others are served; the slot map
// is reloaded so a failover is followed.
func (s *Subs) Reconcile(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	type plan struct {
		client *redis.Client
		slots  map[uint16][]string
		all    []string
	}
	plans := map[string]*plan{}
	var errs []error
	for ch := range s.want {
		c, err := s.cc.MasterForKey(ctx, ch)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		addr := c.Options().Addr
		p := plans[addr]
		if p == nil {
			p = &plan{client: c, slots: map[uint16][]string{}}
			plans[addr] = p
		}
		slot := wire.Slot(ch)
		p.slots[slot] = append(p.slots[slot], ch)
		p.all = append(p.all, ch)
	}
	for addr, n := range s.nodes {
		if _, ok := plans[addr]; !ok || n.dead.Load() {
			s.closeNode(addr, n)
		}
	}
	for addr, p := range plans {
		slices.Sort(p.all)
		sig := strings.Join(p.all, "\n")
		if n, ok := s.nodes[addr]; ok {
			if n.sig == sig {
				continue
			}
			s.closeNode(addr, n)
		}
		n, err := s.subscribe(ctx, p.client, p.slots, len(p.all))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n.sig = sig
		s.nodes[addr] = n
	}
	if err := errors.Join(errs...); err != nil {
		s.cc.ReloadState(ctx)
		return err
	}
	return nil
}

func (s *Subs) closeNode(addr string, n *nodeSub) {
	_ = n.ps.Close()
	<-n.done
	delete(s.nodes, addr)
}

// subscribe opens one master's connection, sends one SSUBSCRIBE per slot
// (a sharded subscription may not span slots) and waits for every channel's
// confirmation, so a message published after Watch returns is delivered.
func (s *Subs) subscribe(ctx context.Context, c *redis.Client, slots map[uint16][]string, total int) (*nodeSub, error) {
	ps := c.SSubscribe(ctx)
	for _, chans := range slots {
		if err := ps.SSubscribe(ctx, chans...); err != nil {
			ps.Close()
			return nil, err
		}
	}
	for confirmed := 0; confirmed < total; {
		msg, err := ps.Receive(ctx)
		if err != nil {
			ps.Close()
			return nil, err
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "ssubscribe" {
				confirmed++
			}
		case *redis.Message:
			s.deliver(m)
		}
	}
	n := &nodeSub{ps: ps, done: make(chan struct{})}
	s.wg.Add(1)
	go s.read(n)
	return n, nil
}

// read forwards one master's messages until its connection ends. It does
// not let go-redis resubscribe after a reconnect (that would send every
// channel in one command, which a Cluster refuses across slots): any error
// or server-side sunsubscribe marks the node for the next Reconcile.
func (s *Subs) read(n *nodeSub) {
	defer s.wg.Done()
	defer close(n.done)
	for {
		msg, err := n.ps.Receive(s.ctx)
		if err != nil {
			n.dead.Store(true)
			s.poke()
			return
		}
		switch m := msg.(type) {
		case *redis.Message:
			s.deliver(m)
		case *redis.Subscription:
			if m.Kind == "sunsubscribe" {
				n.dead.Store(true)
				s.poke()
			}
		}
	}
}

func (s *Subs) deliver(m *redis.Message) {
	select {
	case s.out <- m:
	default:
		s.dropped.Add(1)
	}
}

func (s *Subs) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Out is the messages the subscriptions receive.
func (s *Subs) Out() <-chan *redis.Message { return s.out }

// Start reconciles, in a goroutine of its own, when a connection ends and
// every reconcileEvery, until the stream's ctx ends; then it closes every
// connection. Wait waits for that and for every connection's reader.
func (s *Subs) Start() {
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.loop() }()
}

// Wait waits for the goroutines of the subscriptions to end (after ctx).
func (s *Subs) Wait() { s.wg.Wait() }

func (s *Subs) loop() {
	t := time.NewTicker(reconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			s.mu.Lock()
			for addr, n := range s.nodes {
				s.closeNode(addr, n)
			}
			s.mu.Unlock()
			return
		case <-t.C:
		case <-s.kick:
		}
		ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
		_ = s.Reconcile(ctx)
		cancel()
	}
}

// Dedup drops the second copy of a message that arrived both as a
// classic and as a sharded message (lockwarden's scripts publish both ways
// on a sharded Cluster). Copies pair up one for one, so two real releases
// of one lock within the window still make two events, and a message that
// came only one way (Redisson's SPUBLISH) is never dropped.
type Dedup struct {
	window time.Duration
	limit  int
	seen   map[string][]dedupEntry // by channel and payload
}

type dedupEntry struct {
	sharded bool
	at      time.Time
}

// DedupWindow is how far apart the two copies may arrive: they leave Redis
// in one script, on two connections.
const DedupWindow = 2 * time.Second

// NewDedup forgets a key once it holds more than limit keys (and its
// copies are older than the window).
func NewDedup(limit int) *Dedup {
	return &Dedup{window: DedupWindow, limit: limit, seen: map[string][]dedupEntry{}}
}

// Duplicate records m and reports whether it is the other copy of an
// earlier message.
func (d *Dedup) Duplicate(m *redis.Message, sharded bool, now time.Time) bool {
	key := m.Channel + "\x00" + m.Payload
	cutoff := now.Add(-d.window)
	es := slices.DeleteFunc(d.seen[key], func(e dedupEntry) bool { return e.at.Before(cutoff) })
	for i, e := range es {
		if e.sharded != sharded {
			es = slices.Delete(es, i, i+1)
			d.store(key, es)
			return true
		}
	}
	d.store(key, append(es, dedupEntry{sharded: sharded, at: now}))
	if len(d.seen) > d.limit {
		for k, v := range d.seen {
			if len(v) == 0 || v[len(v)-1].at.Before(cutoff) {
				delete(d.seen, k)
			}
		}
	}
	return false
}

func (d *Dedup) store(key string, es []dedupEntry) {
	if len(es) == 0 {
		delete(d.seen, key)
		return
	}
	d.seen[key] = es
}
