package inspect

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// On a Cluster of Redis >= 7 Redisson publishes unlocks with SPUBLISH, which
// only a sharded subscriber on the master of the channel's slot receives,
// and sharded channels have no pattern form. So the console subscribes by
// name: one SSUBSCRIBE connection per master, carrying the unlock channels
// of the locks the sampler knows (Watch), rebuilt when that set changes, a
// slot moves (Redis then sends sunsubscribe for its channels) or a node's
// connection fails (a failover).

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

// shardReconcileEvery is how often the subscriptions are checked against
// the Cluster client's slot map, which ReloadState refreshes after errors.
const shardReconcileEvery = time.Second

// shardSubs is the set of per-master sharded subscriptions of one stream.
type shardSubs struct {
	cc   *redis.ClusterClient
	ctx  context.Context // ends with the stream
	out  chan *redis.Message
	kick chan struct{}

	dropped *atomic.Int64
	wg      sync.WaitGroup

	mu    sync.Mutex // serialises reconcile
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

func newShardSubs(ctx context.Context, cc *redis.ClusterClient, dropped *atomic.Int64) *shardSubs {
	return &shardSubs{
		cc:      cc,
		ctx:     ctx,
		out:     make(chan *redis.Message, eventBuffer),
		kick:    make(chan struct{}, 1),
		dropped: dropped,
		want:    map[string]struct{}{},
		nodes:   map[string]*nodeSub{},
	}
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

// setWant replaces the channel set; true if it changed.
func (s *shardSubs) setWant(want map[string]struct{}) bool {
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

// reconcile makes the per-master subscriptions match the wanted channels
// under the Cluster client's current slot map. A node that fails keeps
// being retried (next reconcile) while the others are served; the slot map
// is reloaded so a failover is followed.
func (s *shardSubs) reconcile(ctx context.Context) error {
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

func (s *shardSubs) closeNode(addr string, n *nodeSub) {
	_ = n.ps.Close()
	<-n.done
	delete(s.nodes, addr)
}

// subscribe opens one master's connection, sends one SSUBSCRIBE per slot
// (a sharded subscription may not span slots) and waits for every channel's
// confirmation, so a message published after Watch returns is delivered.
func (s *shardSubs) subscribe(ctx context.Context, c *redis.Client, slots map[uint16][]string, total int) (*nodeSub, error) {
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
// or server-side sunsubscribe marks the node for the next reconcile.
func (s *shardSubs) read(n *nodeSub) {
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

func (s *shardSubs) deliver(m *redis.Message) {
	select {
	case s.out <- m:
	default:
		s.dropped.Add(1)
	}
}

func (s *shardSubs) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// loop reconciles when poked and every shardReconcileEvery until the
// stream's ctx ends, then closes every connection.
func (s *shardSubs) loop() {
	t := time.NewTicker(shardReconcileEvery)
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
		_ = s.reconcile(ctx)
		cancel()
	}
}

// pairDedup drops the second copy of a message that arrived both as a
// classic and as a sharded message (lockwarden's scripts publish both ways
// on a sharded Cluster). Copies pair up one for one, so two real releases
// of one lock within the window still make two events, and a message that
// came only one way (Redisson's SPUBLISH) is never dropped.
type pairDedup struct {
	window time.Duration
	seen   map[string][]dedupEntry // by channel and payload
}

type dedupEntry struct {
	sharded bool
	at      time.Time
}

// dedupWindow is how far apart the two copies may arrive: they leave Redis
// in one script, on two connections.
const dedupWindow = 2 * time.Second

func newPairDedup() *pairDedup {
	return &pairDedup{window: dedupWindow, seen: map[string][]dedupEntry{}}
}

// duplicate records m and reports whether it is the other copy of an
// earlier message.
func (d *pairDedup) duplicate(m *redis.Message, sharded bool, now time.Time) bool {
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
	if len(d.seen) > 4*eventBuffer {
		for k, v := range d.seen {
			if len(v) == 0 || v[len(v)-1].at.Before(cutoff) {
				delete(d.seen, k)
			}
		}
	}
	return false
}

func (d *pairDedup) store(key string, es []dedupEntry) {
	if len(es) == 0 {
		delete(d.seen, key)
		return
	}
	d.seen[key] = es
}
