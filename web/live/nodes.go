package live

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
)

// nodeProbeEvery is how often each Redis master gets one PING from the
// console: quick enough to show a dead master within a second or two and
// to follow a Cluster failover, one command per node per second.
const nodeProbeEvery = time.Second

// nodeHealth is the last probe of every master, published whole.
type nodeHealth struct {
	last atomic.Pointer[[]inspect.NodeStatus]
}

// current is the last probe; nil before the first.
func (h *nodeHealth) current() []inspect.NodeStatus {
	if p := h.last.Load(); p != nil {
		return *p
	}
	return nil
}

// down names the masters the last probe found down.
func (h *nodeHealth) down() []string {
	var out []string
	for _, n := range h.current() {
		if !n.Up {
			out = append(out, n.Addr)
		}
	}
	return out
}

// ProbeNodes PINGs every master once per nodeProbeEvery until ctx ends,
// logging each node's transitions.
func (sm *Sampler) ProbeNodes(ctx context.Context) {
	t := time.NewTicker(nodeProbeEvery)
	defer t.Stop()
	was := map[string]bool{}
	_, cluster := sm.insp.Redis().(*redis.ClusterClient)
	for {
		var (
			nodes []inspect.NodeStatus
			err   error
		)
		if prev := sm.nodes.current(); !cluster && len(prev) == 1 && prev[0].Up &&
			time.Since(time.Unix(0, sm.answered.Load())) < nodeProbeEvery {
			// One node that answered the tick's pipeline within the last
			// probe period is up: a PING would be a second round trip for
			// what the tick already proved. (On a Cluster a master that owns
			// none of the sampled keys gets no tick command, so every master
			// is pinged.)
			nodes = prev
		} else {
			pctx, cancel := context.WithTimeout(ctx, nodeProbeEvery)
			nodes, err = sm.insp.Nodes(pctx)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			sm.ticks.redisErrors.Add(1)
			sm.log.Warn("probing Redis nodes", "err", err)
			// Every node is unreachable: keep the names, all down.
			prev := sm.nodes.current()
			nodes = make([]inspect.NodeStatus, len(prev))
			for i, n := range prev {
				nodes[i] = inspect.NodeStatus{Addr: n.Addr, Err: err.Error()}
			}
		}
		sm.nodes.last.Store(&nodes)
		now := map[string]bool{}
		for _, n := range nodes {
			now[n.Addr] = n.Up
			if up, seen := was[n.Addr]; !seen || up != n.Up {
				if n.Up {
					sm.log.Info("Redis node up", "node", n.Addr)
				} else {
					sm.log.Warn("Redis node down", "node", n.Addr, "err", n.Err)
				}
			}
		}
		was = now
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Nodes is the last probe of every master; nil before the first.
func (sm *Sampler) Nodes() []inspect.NodeStatus { return sm.nodes.current() }

// NodesDown names the masters the last probe found down.
func (sm *Sampler) NodesDown() []string { return sm.nodes.down() }

// NodeStatus is one Redis node as the console last saw it.
type NodeStatus struct {
	Name string
	Up   bool
}

// NodeStatuses is what the node-down alert judges: the probe's view once
// it has one; before that the only node, up exactly when sn's tick
// reached Redis.
func (sm *Sampler) NodeStatuses(sn *Snapshot) []NodeStatus {
	cur := sm.nodes.current()
	if cur == nil {
		return []NodeStatus{{Name: redisNodeName(sm.insp), Up: sn != nil && sn.RedisUp}}
	}
	out := make([]NodeStatus, len(cur))
	for i, n := range cur {
		out[i] = NodeStatus{Name: n.Addr, Up: n.Up}
	}
	return out
}

// redisNodeName names the node the console reads, for node-down alerts.
func redisNodeName(st *inspect.Inspector) string {
	if st == nil {
		return ""
	}
	if c, ok := st.Redis().(*redis.Client); ok {
		return c.Options().Addr
	}
	return "redis"
}
