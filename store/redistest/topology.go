package redistest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/redisproc"
)

// TopologyEnv names the environment variable that chooses what Main starts
// for a test binary: unset or "single" is one redis-server, "cluster" a
// 3-master Redis Cluster. Existing suites then run unchanged on a Cluster:
//
//	LOCKWARDEN_TEST_TOPOLOGY=cluster go test ./store/
const TopologyEnv = "LOCKWARDEN_TEST_TOPOLOGY"

// Cluster is a running Redis Cluster; see package redisproc.
type Cluster = redisproc.Cluster

// ClusterOptions shape StartCluster's Cluster; nil is 3 masters.
type ClusterOptions = redisproc.ClusterOptions

// Sentinel is a master, a replica and a sentinel; see package redisproc.
type Sentinel = redisproc.Sentinel

// SentinelOptions shape StartSentinel's topology; nil is the defaults.
type SentinelOptions = redisproc.SentinelOptions

// StartCluster starts a private Cluster stopped when t ends.
func StartCluster(t testing.TB, opts *ClusterOptions) *Cluster {
	t.Helper()
	c, err := redisproc.StartCluster(opts)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

// NewClusterClient returns a Cluster client seeded with every node of c,
// closed when t ends.
func NewClusterClient(t testing.TB, c *Cluster) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// NewClusterBackedClient returns a *redis.Client whose commands cc runs
// (routed by slot; see clusterBacked), for helpers written against
// *redis.Client; closed when t ends. Subscriptions go to c's first master.
func NewClusterBackedClient(t testing.TB, c *Cluster, cc *redis.ClusterClient) *redis.Client {
	t.Helper()
	rdb := clusterBacked(c.Masters[0].Addr, cc)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// StartSentinel starts a private master, replica and sentinel stopped when
// t ends.
func StartSentinel(t testing.TB, opts *SentinelOptions) *Sentinel {
	t.Helper()
	s, err := redisproc.StartSentinel(opts)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// NewFailoverClient returns a client that finds the master through s's
// sentinel and follows failovers, closed when t ends.
func NewFailoverClient(t testing.TB, s *Sentinel) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName, SentinelAddrs: []string{s.Sentinel.Addr}})
	t.Cleanup(func() { c.Close() })
	return c
}

// sharedCluster is Main's Cluster when TopologyEnv is "cluster".
var sharedCluster *Cluster

// SharedCluster returns Main's Cluster, nil on a single node.
func SharedCluster() *Cluster { return sharedCluster }

// Universal returns a new client for the shared Redis, closed when t ends:
// a *redis.ClusterClient on a Cluster, a *redis.Client otherwise. New
// tests that should run on every topology use it.
func Universal(t testing.TB) redis.UniversalClient {
	t.Helper()
	Shared(t)
	if sharedCluster != nil {
		return NewClusterClient(t, sharedCluster)
	}
	return NewClient(t, shared)
}

// UniversalFor returns the client a console over the shared Redis is
// given, as serve gives it: rdb itself on one server (or when rdb is not
// the shared Redis's); on the shared Cluster a new ClusterClient (closed
// when t ends). Code that finds the
// masters from its client's type (an inspect.Inspector, a family reader)
// needs it: rdb (Client's, routing each command by slot) would send a
// keyless SCAN to one master at random.
func UniversalFor(t testing.TB, rdb *redis.Client) redis.UniversalClient {
	t.Helper()
	if sharedCluster == nil || shared == nil || rdb.Options().Addr != shared.Addr {
		return rdb
	}
	return NewClusterClient(t, sharedCluster)
}

// NodeFor returns a client of the one server that holds key: rdb on one
// server; on the shared Cluster the master serving key's slot. Counts a
// server keeps (INFO commandstats) are per node.
func NodeFor(t testing.TB, rdb *redis.Client, key string) *redis.Client {
	t.Helper()
	cc, ok := UniversalFor(t, rdb).(*redis.ClusterClient)
	if !ok {
		return rdb
	}
	node, err := cc.MasterForKey(t.Context(), key)
	if err != nil {
		t.Fatalf("redistest: the master of %q: %v", key, err)
	}
	return node
}

func startShared() (*Server, error) {
	if os.Getenv(TopologyEnv) != "cluster" {
		return Start()
	}
	c, err := redisproc.StartCluster(nil)
	if err != nil {
		return nil, err
	}
	sharedCluster = c
	return c.Masters[0], nil
}

func stopShared() {
	if sharedCluster != nil {
		sharedCluster.Stop()
		return
	}
	shared.Stop()
}

// clusterBacked returns a *redis.Client whose every command, pipeline and
// MULTI/EXEC block is executed by cc, so suites written against
// *redis.Client run on a Cluster unchanged: keys are routed by slot, and a
// command or transaction spanning slots fails as it would for any Cluster
// client. Only what bypasses command processing (Subscribe, Conn, Watch)
// goes to the one node at addr.
func clusterBacked(addr string, cc *redis.ClusterClient) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	c.AddHook(clusterRoute{cc})
	return c
}

type clusterRoute struct{ cc *redis.ClusterClient }

func (h clusterRoute) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h clusterRoute) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		// SCRIPT LOAD has no key: the Cluster client would send it to one
		// node, where a Cluster client's own ScriptLoad loads every master.
		if sc, ok := cmd.(*redis.StringCmd); ok && scriptLoad(cmd) {
			res := h.cc.ScriptLoad(ctx, fmt.Sprint(cmd.Args()[2]))
			sc.SetVal(res.Val())
			sc.SetErr(res.Err())
			return res.Err()
		}
		return h.cc.Process(ctx, cmd)
	}
}

func scriptLoad(cmd redis.Cmder) bool {
	args := cmd.Args()
	return len(args) == 3 && cmd.Name() == "script" && strings.EqualFold(fmt.Sprint(args[1]), "load")
}

func (h clusterRoute) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		run := h.cc.Pipelined
		// A TxPipeline arrives wrapped in MULTI ... EXEC; the Cluster
		// client wraps per slot itself.
		if n := len(cmds); n >= 2 && cmds[0].Name() == "multi" && cmds[n-1].Name() == "exec" {
			cmds, run = cmds[1:n-1], h.cc.TxPipelined
		}
		_, err := run(ctx, func(p redis.Pipeliner) error {
			for _, cmd := range cmds {
				_ = p.Process(ctx, cmd) // queues; never fails
			}
			return nil
		})
		return err
	}
}
