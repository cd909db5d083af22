package inspect

import (
	"context"
	"slices"
	"strings"
	"sync"

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
// each: on a Cluster the masters of the client's slot map, otherwise the
// one node (a Sentinel client's current primary). A master that does not
// answer is reported down and the Cluster client is told to reload its
// slot map, so that a failover is followed without a restart: go-redis
// otherwise keeps dialing a dead master until something reloads the map.
// Once the Cluster has promoted a replica the dead master owns no slots and
// leaves the list. The error is for a Cluster whose map cannot be read at
// all (every node unreachable); ctx bounds the whole call.
func (c *Inspector) Nodes(ctx context.Context) ([]NodeStatus, error) {
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok {
		return []NodeStatus{pingNode(ctx, nodeName(c.rdb), c.rdb)}, nil
	}
	var mu sync.Mutex
	var out []NodeStatus
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		st := pingNode(ctx, node.Options().Addr, node)
		mu.Lock()
		out = append(out, st)
		mu.Unlock()
		return nil
	})
	down := err != nil
	for _, n := range out {
		down = down || !n.Up
	}
	if down {
		cc.ReloadState(ctx)
	}
	if err != nil && len(out) == 0 {
		return nil, err
	}
	slices.SortFunc(out, func(a, b NodeStatus) int { return strings.Compare(a.Addr, b.Addr) })
	return out, nil
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
