package inspect

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/redis/go-redis/v9"
)

// NodeStatus is one Redis master as the last Nodes call found it.
type NodeStatus struct {
	Addr string `json:"addr"`
	Up   bool   `json:"up"`
	// Err is why the node is down ("" when up).
	Err string `json:"error,omitempty"`
}

// Nodes pings every master the client routes to, concurrently, one PING
// each: on a Cluster the masters of the slot map, otherwise the one node (a
// Sentinel client's current primary). A master that does not answer is
// reported down and the Cluster client is told to reload its slot map in
// the background, so that a failover is followed without a restart:
// go-redis otherwise keeps dialing a dead master until something reloads
// the map. Once the Cluster has promoted a replica the dead master owns no
// slots and leaves the list. The error is for a Cluster whose map has
// never been read; ctx bounds the whole call.
//
// It does not use ForEachMaster: that reloads the slot map first, from a
// random node, synchronously, so a hung master (stopped, or behind a
// partition, rather than refusing connections) took the whole deadline one
// call in three and every master read as down.
func (c *Inspector) Nodes(ctx context.Context) ([]NodeStatus, error) {
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok {
		return []NodeStatus{pingNode(ctx, nodeName(c.rdb), c.rdb)}, nil
	}
	masters, err := c.masterClients(ctx, cc)
	if err != nil {
		return nil, err
	}
	var (
		mu  sync.Mutex
		out []NodeStatus
		wg  sync.WaitGroup
	)
	for addr, node := range masters {
		wg.Go(func() {
			st := NodeStatus{Addr: addr, Up: true}
			if err := within(ctx, func(ctx context.Context) error { return node.Ping(ctx).Err() }); err != nil {
				st = NodeStatus{Addr: addr, Err: err.Error()}
			}
			mu.Lock()
			out = append(out, st)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, n := range out {
		if !n.Up {
			cc.ReloadState(ctx)
			break
		}
	}
	slices.SortFunc(out, func(a, b NodeStatus) int { return strings.Compare(a.Addr, b.Addr) })
	return out, nil
}

// masterClients returns go-redis's client of each master in the slot map,
// by address, without the synchronous reload ForEachMaster starts with.
func (c *Inspector) masterClients(ctx context.Context, cc *redis.ClusterClient) (map[string]*redis.Client, error) {
	slots, err := c.clusterSlots(ctx, cc)
	if err != nil {
		return nil, err
	}
	masters := map[string]*redis.Client{}
	for _, r := range slots {
		// The client go-redis routes this range to, from its cached map.
		node, err := cc.MasterForKey(ctx, store.SlotKey(uint16(r.Start)))
		if err != nil {
			return nil, err
		}
		masters[node.Options().Addr] = node
	}
	return masters, nil
}

// slotsTimeout bounds the slot map read of a health check: the reply comes
// from one node, possibly the one that hangs, and the PINGs need the rest
// of the caller's deadline.
const slotsTimeout = 300 * time.Millisecond

// clusterSlots reads the Cluster's slot ranges, falling back to the last
// ranges read when no answer comes in time (a late answer is kept for the
// next call).
func (c *Inspector) clusterSlots(ctx context.Context, cc *redis.ClusterClient) ([]redis.ClusterSlot, error) {
	sctx, cancel := context.WithTimeout(ctx, slotsTimeout)
	defer cancel()
	err := errSlotsBusy
	if c.slotsBusy.CompareAndSwap(false, true) {
		err = within(sctx, func(sctx context.Context) error {
			defer c.slotsBusy.Store(false)
			slots, err := cc.ClusterSlots(sctx).Result()
			if err == nil && len(slots) == 0 {
				err = errors.New("inspect: the Cluster reports no slots")
			}
			if err == nil {
				c.slots.Store(&slots)
			}
			return err
		})
	}
	if last := c.slots.Load(); last != nil {
		return *last, nil
	}
	return nil, err
}

var errSlotsBusy = errors.New("inspect: the last slot map read has not returned")

// within runs f and returns its error, or ctx's as soon as ctx ends: a
// client without ContextTimeoutEnabled waits for a hung node until its own
// read timeout, and f is then left to finish on its own (one call per node
// per check; the slot map read is never started twice).
func within(ctx context.Context, f func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func pingNode(ctx context.Context, addr string, rdb redis.Cmdable) NodeStatus {
	if err := rdb.Ping(ctx).Err(); err != nil {
		return NodeStatus{Addr: addr, Err: err.Error()}
	}
	return NodeStatus{Addr: addr, Up: true}
}

// nodeName names a non-Cluster client's node: its address, or "primary"
// for a Sentinel client, whose address changes with failovers.
func nodeName(rdb redis.UniversalClient) string {
	if c, ok := rdb.(*redis.Client); ok && c.Options().Addr != "FailoverClient" {
		return c.Options().Addr
	}
	return "primary"
}
