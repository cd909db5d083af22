package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lockwarden/lockwarden/store/inspect/internal/nodes"
	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// The masters behind the Inspector's client, as the console sees them
// (package internal/nodes does the talking): their health, and which
// objects a sample leaves unread because their master does not answer.

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
// reported down and the Cluster client is told to reload its slot map, so
// that a failover is followed without a restart. Until a later call finds
// a master up again, Sample reports its keys unreadable without sending
// them anything: each dial of a dead node costs go-redis several retries,
// more than a tick. The error is for a Cluster whose map has never been
// read; ctx bounds the whole call.
func (c *Inspector) Nodes(ctx context.Context) ([]NodeStatus, error) {
	sts, err := c.nodes.Ping(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]NodeStatus, len(sts))
	for i, st := range sts {
		out[i] = NodeStatus{Addr: st.Addr, Up: st.Up, Err: st.Err}
	}
	return out, nil
}

// ForEachNode runs fn on every node that owns keys: each master of a
// Cluster (concurrently), each shard of a Ring, or the one server; the
// first error is returned. The walk and family pages list keys through it.
func (c *Inspector) ForEachNode(ctx context.Context, fn func(ctx context.Context, node *redis.Client) error) error {
	return c.nodes.Each(ctx, fn)
}

// ErrNodeDown is why Sample left an object unread whose master the last
// Nodes call found down.
var ErrNodeDown = errors.New("inspect: Redis node down")

// IsClusterDown says err (or a reason built from one) is a node's
// CLUSTERDOWN refusal: the Cluster lost a master with no replica and
// requires every slot to be served.
func IsClusterDown(reason string) bool { return strings.Contains(reason, "CLUSTERDOWN") }

// errSampleCut is a Cluster sample that ran out of time without any
// master failing to answer: the Cluster is slow, not partly down.
var errSampleCut = errors.New("inspect: sample pipeline ran out of time")

// markDown takes the masters of the objects a sample could not read as
// down, so the next samples skip them without waiting on their dials.
func (c *Inspector) markDown(unread map[string]Unread) {
	down := map[string]string{}
	for _, u := range unread {
		if u.Node != "" && !errors.Is(u.Err, ErrNodeDown) {
			down[u.Node] = u.Err.Error()
		}
	}
	c.nodes.MarkDown(down)
}

// skipDown splits names into those to read and those whose key or stats
// ring lives on a master in down (recorded in skipped).
func (c *Inspector) skipDown(ctx context.Context, names []string, down map[string]string, skipped map[string]Unread) []string {
	keep := make([]string, 0, len(names))
	for _, n := range names {
		node := c.nodes.NodeOf(ctx, n)
		if _, bad := down[node]; !bad {
			if ring := c.nodes.NodeOf(ctx, wire.StatsKey(n)); ring != node {
				if _, bad = down[ring]; bad {
					node = ring
				}
			}
		}
		if reason, bad := down[node]; bad {
			skipped[n] = Unread{Node: node, Err: fmt.Errorf("%w: %s", ErrNodeDown, reason)}
			continue
		}
		keep = append(keep, n)
	}
	return keep
}

// unreadable records name in s.Unreadable when any of its reads failed for
// want of an answer from its node; nil commands are skipped.
func (c *Inspector) unreadable(ctx context.Context, s *Sample, name string, cmds ...redis.Cmder) bool {
	for _, cmd := range cmds {
		if cmd == nil || !nodes.Failure(cmd.Err()) {
			continue
		}
		if s.Unreadable == nil {
			s.Unreadable = map[string]Unread{}
		}
		s.Unreadable[name] = Unread{Node: c.nodes.NodeOf(ctx, name), Err: cmd.Err()}
		return true
	}
	return false
}
