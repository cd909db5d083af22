// Package nodes is how the console talks to the Redis masters behind one
// client: which master holds a key (NodeOf), running a call on each of
// them (Each), pinging them (Ping), remembering which are down (Down,
// MarkDown, MarkFailed) so reads skip them instead of waiting on their
// dials, and pipelines that tolerate error replies (Exec) or a master that
// does not answer (ExecPartial). It knows nothing of locks or limiters:
// package inspect and its rooms (walk, family) share it.
package nodes

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

// Set is the masters of one client: one node, a Cluster's masters or a
// Ring's shards. Safe for concurrent use.
type Set struct {
	rdb redis.UniversalClient
	// slots is a Cluster's slot ranges as last read, kept so a health
	// check can name every master while the map cannot be read.
	slots     atomic.Pointer[[]redis.ClusterSlot]
	slotsBusy atomic.Bool
	// down is the masters the last Ping found down, and those a read found
	// not answering since (MarkDown).
	down atomic.Pointer[map[string]mark]
}

// New is the masters rdb routes to. The caller keeps rdb.
func New(rdb redis.UniversalClient) *Set { return &Set{rdb: rdb} }

// Status is one master as Ping found it.
type Status struct {
	Addr string
	Up   bool
	Err  string // why it is down ("" when up)
}

// Ping pings every master, concurrently, one PING each: on a Cluster the
// masters of the slot map, otherwise the one node (a Sentinel client's
// current primary). A master that does not answer is reported down (and
// Down says so until a later Ping finds it up) and the Cluster client is
// told to reload its slot map in the background, so that a failover is
// followed without a restart: go-redis otherwise keeps dialing a dead
// master until something reloads the map. Once the Cluster has promoted a
// replica the dead master owns no slots and leaves the list. The error is
// for a Cluster whose map has never been read; ctx bounds the whole call.
//
// It does not use ForEachMaster: that reloads the slot map first, from a
// random node, synchronously, so a hung master (stopped, or behind a
// partition, rather than refusing connections) took the whole deadline one
// call in three and every master read as down.
func (s *Set) Ping(ctx context.Context) ([]Status, error) {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return []Status{pingNode(ctx, Name(s.rdb), s.rdb)}, nil
	}
	masters, err := s.Masters(ctx, cc)
	if err != nil {
		return nil, err
	}
	var (
		mu  sync.Mutex
		out []Status
		wg  sync.WaitGroup
	)
	for addr, node := range masters {
		wg.Go(func() {
			st := Status{Addr: addr, Up: true}
			if err := Within(ctx, func(ctx context.Context) error { return node.Ping(ctx).Err() }); err != nil {
				st = Status{Addr: addr, Err: err.Error()}
			}
			mu.Lock()
			out = append(out, st)
			mu.Unlock()
		})
	}
	wg.Wait()
	gone := map[string]mark{}
	for _, n := range out {
		if !n.Up {
			gone[n.Addr] = mark{reason: n.Err}
		}
	}
	s.down.Store(&gone)
	if len(gone) > 0 {
		cc.ReloadState(ctx)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Addr, b.Addr) })
	return out, nil
}

// Masters returns go-redis's client of each master in the slot map, by
// address, without the synchronous reload ForEachMaster starts with.
func (s *Set) Masters(ctx context.Context, cc *redis.ClusterClient) (map[string]*redis.Client, error) {
	slots, err := s.clusterSlots(ctx, cc)
	if err != nil {
		return nil, err
	}
	masters := map[string]*redis.Client{}
	for _, r := range slots {
		// The client go-redis routes this range to, from its cached map.
		node, err := cc.MasterForKey(ctx, wire.SlotKey(uint16(r.Start)))
		if err != nil {
			return nil, err
		}
		masters[node.Options().Addr] = node
	}
	return masters, nil
}

// Each runs fn on every node that owns keys: each master of a Cluster
// (concurrently, over Masters: no synchronous slot-map reload that can
// wait on a hung node first), each shard of a Ring, or the one server. It
// returns the first error.
func (s *Set) Each(ctx context.Context, fn func(ctx context.Context, node *redis.Client) error) error {
	switch rdb := s.rdb.(type) {
	case *redis.ClusterClient:
		masters, err := s.Masters(ctx, rdb)
		if err != nil {
			return err
		}
		var (
			wg    sync.WaitGroup
			once  sync.Once
			first error
		)
		for _, node := range masters {
			wg.Go(func() {
				if err := fn(ctx, node); err != nil {
					once.Do(func() { first = err })
				}
			})
		}
		wg.Wait()
		return first
	case *redis.Ring:
		return rdb.ForEachShard(ctx, fn)
	case *redis.Client:
		return fn(ctx, rdb)
	}
	return errors.New("inspect: want a node, Cluster or Ring client")
}

// slotsTimeout bounds the slot map read of a health check: the reply comes
// from one node, possibly the one that hangs, and the PINGs need the rest
// of the caller's deadline.
const slotsTimeout = 300 * time.Millisecond

// clusterSlots reads the Cluster's slot ranges, falling back to the last
// ranges read when no answer comes in time (a late answer is kept for the
// next call).
func (s *Set) clusterSlots(ctx context.Context, cc *redis.ClusterClient) ([]redis.ClusterSlot, error) {
	sctx, cancel := context.WithTimeout(ctx, slotsTimeout)
	defer cancel()
	err := errSlotsBusy
	if s.slotsBusy.CompareAndSwap(false, true) {
		err = Within(sctx, func(sctx context.Context) error {
			defer s.slotsBusy.Store(false)
			slots, err := cc.ClusterSlots(sctx).Result()
			if err == nil && len(slots) == 0 {
				err = errors.New("inspect: the Cluster reports no slots")
			}
			if err == nil {
				s.slots.Store(&slots)
			}
			return err
		})
	}
	if last := s.slots.Load(); last != nil {
		return *last, nil
	}
	if ranges := cachedRanges(ctx, cc); len(ranges) > 0 {
		return ranges, nil
	}
	return nil, err
}

// cachedRanges rebuilds slot ranges from go-redis's own cached slot map
// (MasterForKey needs no round trip once the map is loaded): for a first
// check that finds the node it asks for the map hung. It costs a lookup per
// slot, about a millisecond, and only until one read of the map succeeds.
func cachedRanges(ctx context.Context, cc *redis.ClusterClient) []redis.ClusterSlot {
	var out []redis.ClusterSlot
	for slot := 0; slot < 16384; slot++ {
		node, err := cc.MasterForKey(ctx, wire.SlotKey(uint16(slot)))
		if err != nil {
			return nil
		}
		addr := node.Options().Addr
		if n := len(out); n > 0 && out[n-1].Nodes[0].Addr == addr && out[n-1].End == slot-1 {
			out[n-1].End = slot
			continue
		}
		out = append(out, redis.ClusterSlot{Start: slot, End: slot, Nodes: []redis.ClusterNode{{Addr: addr}}})
	}
	return out
}

var errSlotsBusy = errors.New("inspect: the last slot map read has not returned")

// Within runs f and returns its error, or ctx's as soon as ctx ends: a
// client without ContextTimeoutEnabled waits for a hung node until its own
// read timeout, and f is then left to finish on its own (one call per node
// per check; the slot map read is never started twice).
func Within(ctx context.Context, f func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func pingNode(ctx context.Context, addr string, rdb redis.Cmdable) Status {
	if err := rdb.Ping(ctx).Err(); err != nil {
		return Status{Addr: addr, Err: err.Error()}
	}
	return Status{Addr: addr, Up: true}
}

// Name names a non-Cluster client's node: its address, or "primary" for a
// Sentinel client, whose address changes with failovers.
func Name(rdb redis.UniversalClient) string {
	if c, ok := rdb.(*redis.Client); ok && c.Options().Addr != "FailoverClient" {
		return c.Options().Addr
	}
	return "primary"
}

// NodeOf names the master that holds key: on a Cluster, by the client's
// slot map (no round trip once the map is loaded).
func (s *Set) NodeOf(ctx context.Context, key string) string {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return Name(s.rdb)
	}
	node, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return ""
	}
	return node.Options().Addr
}

// Scan walks the keys matching match of type typ with SCAN (COUNT count) on
// every node and hands each page of keys to page, one page at a time even
// when a Cluster's masters are scanned concurrently (page needs no locking
// of its own), so a caller acting on each page acts in bounded steps. An
// error from page stops the walk and is returned.
func (s *Set) Scan(ctx context.Context, match, typ string, count int64, page func(keys []string) error) error {
	var mu sync.Mutex
	return s.Each(ctx, func(ctx context.Context, node *redis.Client) error {
		var cursor uint64
		// Bounded: a pass over a node ends with cursor 0 long before this.
		for round := 0; round < 1_000_000; round++ {
			keys, next, err := node.ScanType(ctx, cursor, match, count, typ).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				mu.Lock()
				err := page(keys)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
		return nil
	})
}
