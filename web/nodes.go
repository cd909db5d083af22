package web

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

// probeNodes runs until ctx ends, logging each node's transitions.
func (s *Server) probeNodes(ctx context.Context) {
	t := time.NewTicker(nodeProbeEvery)
	defer t.Stop()
	was := map[string]bool{}
	_, cluster := s.insp.Redis().(*redis.ClusterClient)
	for {
		var (
			nodes []inspect.NodeStatus
			err   error
		)
		if prev := s.nodes.current(); !cluster && len(prev) == 1 && prev[0].Up &&
			time.Since(time.Unix(0, s.sampler.answered.Load())) < nodeProbeEvery {
			// One node that answered the tick's pipeline within the last
			// probe period is up: a PING would be a second round trip for
			// what the tick already proved. (On a Cluster a master that owns
			// none of the sampled keys gets no tick command, so every master
			// is pinged.)
			nodes = prev
		} else {
			pctx, cancel := context.WithTimeout(ctx, nodeProbeEvery)
			nodes, err = s.insp.Nodes(pctx)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.metrics.redisErrors.Add(1)
			s.log.Warn("probing Redis nodes", "err", err)
			// Every node is unreachable: keep the names, all down.
			prev := s.nodes.current()
			nodes = make([]inspect.NodeStatus, len(prev))
			for i, n := range prev {
				nodes[i] = inspect.NodeStatus{Addr: n.Addr, Err: err.Error()}
			}
		}
		s.nodes.last.Store(&nodes)
		now := map[string]bool{}
		for _, n := range nodes {
			now[n.Addr] = n.Up
			if up, seen := was[n.Addr]; !seen || up != n.Up {
				if n.Up {
					s.log.Info("Redis node up", "node", n.Addr)
				} else {
					s.log.Warn("Redis node down", "node", n.Addr, "err", n.Err)
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

// nodeStatuses feeds the node-down alert: the probe's view once it has
// one, before that the sampler's single connection.
func (s *Server) nodeStatuses(sn *snapshot) []nodeStatus {
	cur := s.nodes.current()
	if cur == nil {
		return singleNode(redisNodeName(s.insp))(sn)
	}
	out := make([]nodeStatus, len(cur))
	for i, n := range cur {
		out[i] = nodeStatus{Name: n.Addr, Up: n.Up}
	}
	return out
}

var descNodeUp = desc("lockwarden_redis_node_up", "1 when the Redis master answered the console's last probe, 0 when not.", "node")

// nodeCollector exports lockwarden_redis_node_up per master.
type nodeCollector struct{ s *Server }

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descNodeUp }

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	for _, n := range c.s.nodes.current() {
		v := 0.0
		if n.Up {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descNodeUp, prometheus.GaugeValue, v, n.Addr)
	}
}
