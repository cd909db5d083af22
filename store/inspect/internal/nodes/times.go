package nodes

import (
	"context"
	"strconv"
	"time"

	"github.com/lockwarden/lockwarden/luascripts"
	"github.com/redis/go-redis/v9"
)

var nodeTime = luascripts.Source("node_time")

// Times dates keys by the master that serves them. On a Cluster of more
// than one master it queues in pipe one node_time.lua per master serving
// one of keys (keyed by the first of them, so it runs in that master's
// share of the pipeline, among that master's reads); elsewhere it queues
// nothing, as a keyless TIME already runs beside the reads. The returned
// func, called once pipe ran, gives each key its master's time; a key
// whose master's time did not come back is left out (nil when none).
//
// go-redis runs a Cluster pipeline's shares concurrently, one per master,
// so one keyless TIME can be read far from another master's reads when
// the CPUs are busy: a lease compared across the two can seem to end
// before it did.
func (s *Set) Times(ctx context.Context, pipe redis.Pipeliner, keys []string) func() map[string]time.Time {
	none := func() map[string]time.Time { return nil }
	if _, ok := s.rdb.(*redis.ClusterClient); !ok || len(keys) == 0 {
		return none
	}
	byNode := map[string][]string{}
	for _, k := range keys {
		if n := s.NodeOf(ctx, k); n != "" {
			byNode[n] = append(byNode[n], k)
		}
	}
	if len(byNode) < 2 {
		return none
	}
	cmds := make(map[string]*redis.Cmd, len(byNode))
	for n, ks := range byNode {
		cmds[n] = pipe.Eval(ctx, nodeTime, ks[:1])
	}
	return func() map[string]time.Time {
		out := make(map[string]time.Time, len(keys))
		for n, cmd := range cmds {
			t, ok := timeReply(cmd)
			if !ok {
				continue
			}
			for _, k := range byNode[n] {
				out[k] = t
			}
		}
		return out
	}
}

// timeReply reads node_time.lua's {seconds, microseconds}.
func timeReply(cmd *redis.Cmd) (time.Time, bool) {
	v, err := cmd.StringSlice()
	if err != nil || len(v) != 2 {
		return time.Time{}, false
	}
	sec, err1 := strconv.ParseInt(v[0], 10, 64)
	usec, err2 := strconv.ParseInt(v[1], 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, usec*1000), true
}
