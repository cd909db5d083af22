package inspect

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// NodeSettings are the settings of one master that decide whether a lock
// in it excludes: what it evicts, what it announces, what survives a
// restart, how many replicas can confirm a grant. A setting CONFIG GET
// could not read (a managed Redis that renames CONFIG) is "" and is not
// judged.
type NodeSettings struct {
	Addr            string `json:"addr"`
	MaxMemory       string `json:"maxmemory"`
	MaxMemoryPolicy string `json:"maxmemory_policy"`
	KeyspaceEvents  string `json:"notify_keyspace_events"`
	AppendOnly      string `json:"appendonly"`
	Save            string `json:"save"`
	// Replicas is INFO replication's connected_slaves; -1 when unread.
	Replicas int    `json:"replicas"`
	Err      string `json:"error,omitempty"`
}

// Settings reads every master's NodeSettings: one pipeline per node of
// five CONFIG GETs and an INFO replication.
func (c *Inspector) Settings(ctx context.Context) ([]NodeSettings, error) {
	var mu sync.Mutex
	var out []NodeSettings
	err := c.ForEachNode(ctx, func(ctx context.Context, node *redis.Client) error {
		st := NodeSettings{Addr: node.Options().Addr, Replicas: -1}
		pipe := node.Pipeline()
		names := []string{"maxmemory", "maxmemory-policy", "notify-keyspace-events", "appendonly", "save"}
		gets := make([]*redis.MapStringStringCmd, len(names))
		for i, n := range names {
			gets[i] = pipe.ConfigGet(ctx, n)
		}
		info := pipe.Info(ctx, "replication")
		_, _ = pipe.Exec(ctx)
		vals := make([]string, len(names))
		for i, g := range gets {
			m, err := g.Result()
			if err != nil {
				st.Err = err.Error()
				continue
			}
			vals[i] = m[names[i]]
		}
		st.MaxMemory, st.MaxMemoryPolicy, st.KeyspaceEvents, st.AppendOnly, st.Save = vals[0], vals[1], vals[2], vals[3], vals[4]
		if s, err := info.Result(); err == nil {
			for line := range strings.SplitSeq(s, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_slaves:"); ok {
					if n, err := strconv.Atoi(v); err == nil {
						st.Replicas = n
					}
				}
			}
		}
		mu.Lock()
		out = append(out, st)
		mu.Unlock()
		return nil
	})
	return out, err
}
