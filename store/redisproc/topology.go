package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNoRedisCLI says redis-cli, which builds a Cluster, is not on PATH.
var ErrNoRedisCLI = errors.New("redis-cli not found on PATH: install the Debian package `redis-tools` (apt-get install redis-tools), or run `make deps`")

// settleTimeout bounds how long a topology may take to come up: a loaded
// two-core machine needs a few seconds for a Cluster to agree on its slots.
const settleTimeout = 30 * time.Second

// ClusterOptions shape StartCluster's Cluster. The zero value (or nil) is
// 3 masters, no replicas.
type ClusterOptions struct {
	Masters int // default 3
	// ReplicasPerMaster adds replicas, for failover tests.
	ReplicasPerMaster int
	// NodeTimeout is cluster-node-timeout: how long a master may be silent
	// before its replica takes over. Default 2s.
	NodeTimeout time.Duration
	// Extra is appended to every node's arguments.
	Extra []string
}

// Cluster is a Redis Cluster of private redis-server children on loopback.
type Cluster struct {
	Masters  []*Server // in the order of their slot ranges at creation
	Replicas []*Server // Replicas[i] replicates some master; see ROLE
}

// Nodes returns every node, masters first.
func (c *Cluster) Nodes() []*Server {
	return append(append([]*Server(nil), c.Masters...), c.Replicas...)
}

// Addrs returns the address of every node, masters first.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.Addr)
	}
	return out
}

// URL is a redis:// URL of the first master with the others as ?addr= seeds.
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	u := "redis://" + addrs[0]
	for i, a := range addrs[1:] {
		if i == 0 {
			u += "?addr=" + a
		} else {
			u += "&addr=" + a
		}
	}
	return u
}

// Stop kills every node. Safe to call twice.
func (c *Cluster) Stop() {
	for _, n := range c.Nodes() {
		n.Stop()
	}
}

// StartCluster starts the nodes with cluster-enabled, joins them with
// `redis-cli --cluster create` and waits until every node reports
// cluster_state:ok with all 16384 slots assigned.
func StartCluster(opts *ClusterOptions) (*Cluster, error) {
	var o ClusterOptions
	if opts != nil {
		o = *opts
	}
	if o.Masters <= 0 {
		o.Masters = 3
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = 2 * time.Second
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, ErrNoRedisCLI
	}
	// A replica that never finished its first sync refuses to take over,
	// and Redis 7 delays that sync by 5 s by default.
	args := append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", strconv.FormatInt(o.NodeTimeout.Milliseconds(), 10),
		"--repl-diskless-sync-delay", "0"}, o.Extra...)
	total := o.Masters * (1 + o.ReplicasPerMaster)
	var nodes []*Server
	fail := func(err error) (*Cluster, error) {
		for _, n := range nodes {
			n.Stop()
		}
		return nil, err
	}
	for i := 0; i < total; i++ {
		n, err := Start(args...)
		if err != nil {
			return fail(err)
		}
		nodes = append(nodes, n)
	}
	create := []string{"--cluster", "create"}
	for _, n := range nodes {
		create = append(create, n.Addr)
	}
	create = append(create, "--cluster-replicas", strconv.Itoa(o.ReplicasPerMaster), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, create...).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("redis-cli --cluster create: %v: %s", err, lastLines(string(out), 5)))
	}
	c := &Cluster{}
	for _, n := range nodes {
		if err := waitClusterOK(ctx, n.Addr, total); err != nil {
			return fail(err)
		}
		role, err := nodeRole(ctx, n.Addr)
		if err != nil {
			return fail(err)
		}
		if role == "master" {
			c.Masters = append(c.Masters, n)
			continue
		}
		if err := waitReplicaSynced(ctx, n.Addr); err != nil {
			return fail(err)
		}
		c.Replicas = append(c.Replicas, n)
	}
	return c, nil
}

// waitClusterOK polls CLUSTER INFO on addr until the node sees a healthy
// cluster of want nodes.
func waitClusterOK(ctx context.Context, addr string, want int) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	var last string
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil {
			last = info
			f := infoFields(info)
			if f["cluster_state"] == "ok" && f["cluster_slots_assigned"] == "16384" &&
				f["cluster_slots_ok"] == "16384" && f["cluster_known_nodes"] == strconv.Itoa(want) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster node %s not ready within %s: %s", addr, settleTimeout, strings.TrimSpace(last))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitReplicaSynced polls INFO replication until the replica's link to its
// master is up, so it holds data and may be promoted.
func waitReplicaSynced(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for {
		if info, err := c.Info(ctx, "replication").Result(); err == nil && infoFields(info)["master_link_status"] == "up" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica %s did not sync with its master within %s", addr, settleTimeout)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func nodeRole(ctx context.Context, addr string) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	v, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(v) == 0 {
		return "", fmt.Errorf("ROLE on %s: %v", addr, err)
	}
	role, _ := v[0].(string)
	return role, nil
}

// infoFields splits INFO-style "key:value" lines.
func infoFields(info string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	return m
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// SentinelOptions shape StartSentinel's topology; nil is the defaults.
type SentinelOptions struct {
	MasterName string // default "mymaster"
	// DownAfter is down-after-milliseconds (default 1s) and FailoverTimeout
	// failover-timeout (default 3s): short, so a failover finishes in a few
	// seconds.
	DownAfter       time.Duration
	FailoverTimeout time.Duration
}

// Sentinel is a master, one replica and one sentinel (quorum 1) watching
// them. After a failover the roles of Master and Replica are swapped on
// the servers; CurrentMaster asks the sentinel which is which.
type Sentinel struct {
	MasterName string
	Master     *Server // the master at start
	Replica    *Server // its replica at start
	Sentinel   *Server
}

// StartSentinel starts the three processes and waits until the sentinel
// knows the replica (so it can fail over to it).
func StartSentinel(opts *SentinelOptions) (*Sentinel, error) {
	var o SentinelOptions
	if opts != nil {
		o = *opts
	}
	if o.MasterName == "" {
		o.MasterName = "mymaster"
	}
	if o.DownAfter <= 0 {
		o.DownAfter = time.Second
	}
	if o.FailoverTimeout <= 0 {
		o.FailoverTimeout = 3 * time.Second
	}
	s := &Sentinel{MasterName: o.MasterName}
	var err error
	if s.Master, err = Start(); err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(s.Master.Addr)
	if s.Replica, err = Start("--replicaof", host, port); err != nil {
		s.Stop()
		return nil, err
	}
	conf := func(dir string, _ int) ([]string, error) {
		path := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]s 1\n"+
			"sentinel down-after-milliseconds %[1]s %[4]d\n"+
			"sentinel failover-timeout %[1]s %[5]d\n",
			o.MasterName, host, port, o.DownAfter.Milliseconds(), o.FailoverTimeout.Milliseconds())
		return []string{path, "--sentinel"}, os.WriteFile(path, []byte(text), 0o600)
	}
	if s.Sentinel, err = start(conf, nil); err != nil {
		s.Stop()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel.Addr, MaxRetries: -1})
	defer sc.Close()
	for {
		reps, err := sc.Replicas(ctx, o.MasterName).Result()
		if err == nil && len(reps) == 1 && reps[0]["flags"] == "slave" && reps[0]["master-link-status"] == "ok" {
			return s, nil
		}
		select {
		case <-ctx.Done():
			s.Stop()
			return nil, fmt.Errorf("sentinel on %s did not see a healthy replica within %s (last: %v %v)", s.Sentinel.Addr, settleTimeout, reps, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// URL is the redis+sentinel:// URL of the topology (see package redisconn).
func (s *Sentinel) URL() string { return "redis+sentinel://" + s.Sentinel.Addr + "/" + s.MasterName }

// CurrentMaster asks the sentinel for the master's address.
func (s *Sentinel) CurrentMaster(ctx context.Context) (string, error) {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel.Addr, MaxRetries: -1})
	defer sc.Close()
	hp, err := sc.GetMasterAddrByName(ctx, s.MasterName).Result()
	if err != nil {
		return "", err
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel answered %v for master %s", hp, s.MasterName)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// Stop kills the three processes. Safe to call twice.
func (s *Sentinel) Stop() {
	for _, n := range []*Server{s.Sentinel, s.Replica, s.Master} {
		if n != nil {
			n.Stop()
		}
	}
}
