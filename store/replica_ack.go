package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/redis/go-redis/v9"
)

// Replica acknowledgement: a lock write that must reach replicas before it
// counts.
//
// Replication is asynchronous: a master that dies after granting a lock
// and before its replica received the grant leaves a promoted replica that
// never heard of it, and another client takes the lock while the first
// still believes it holds it. Redisson's default (checkLockSyncedSlaves,
// slavesSyncTimeout) sends WAIT after each lock write and fails the call
// when no replica confirmed in time. store does the same for its reentrant
// Lock and FencedLock: the grant or renewal script and a WAIT (WAITAOF on
// a server that has it, with Options.ReplicaAckPersist) go out in one
// pipeline on the connection to the lock's master, so the acknowledgement
// costs no extra round trip, only the replica's reply time. A grant whose
// WAIT counted fewer replicas than required is withdrawn with one release
// and reported as ErrNotObtained wrapping a *ReplicationError; a renewal
// that fell short reports the *ReplicationError (the master applied it).
// A release does not wait: lost in a failover, it leaves the hold on the
// promoted replica until its lease ends, so the next holder waits longer
// but there are never two (a hand-off's grant is confirmed by its waiter).
//
// How many replicas a master has is learnt from INFO (connected_slaves),
// once per node at first use and again at most every ackRecheck while
// calls keep coming, in the background. A count that drops (a replica's
// link breaking for a moment) is only believed after it stayed down for
// ackForget, on the same master run: a master whose replica blinked keeps
// requiring it, so a grant written in that blink is never reported held.

const (
	// DefaultReplicaAckTimeout is how long a lock write waits for its
	// replicas when Options.ReplicaAckTimeout is zero (Redisson's
	// slavesSyncTimeout).
	DefaultReplicaAckTimeout = time.Second
	// ackRecheck is how often a node's replica count is read again while
	// it is used.
	ackRecheck = time.Second
	// ackForget is how long fewer replicas must be seen on one master run
	// before auto mode waits for fewer.
	ackForget = 5 * time.Second
)

// replicaAcks is Options.ReplicaAcks with every negative value as -1.
func (o *Options) replicaAcks() int {
	if o == nil {
		return 0
	}
	return max(o.ReplicaAcks, -1)
}

func (o *Options) ackTimeout() time.Duration {
	if o == nil || o.ReplicaAckTimeout <= 0 {
		return DefaultReplicaAckTimeout
	}
	return o.ReplicaAckTimeout
}

// acker decides, per master, how many replicas a lock write waits for.
type acker struct {
	want    int // > 0 fixed; 0 auto (as many as the master has)
	timeout time.Duration
	persist bool

	mu    sync.Mutex
	nodes map[string]*ackNode // by master address; "" for a non-Cluster client
}

func newAcker(rdb redis.UniversalClient, o *Options) *acker {
	if o != nil && o.ReplicaAcks < 0 {
		return nil
	}
	a := &acker{timeout: waitBound(o.ackTimeout(), readTimeout(rdb)), nodes: map[string]*ackNode{}}
	if o != nil {
		a.want, a.persist = o.ReplicaAcks, o.ReplicaAckPersist
	}
	return a
}

// ackNode is what one master told INFO.
type ackNode struct {
	mu       sync.Mutex
	known    bool
	runID    string
	replicas int       // replicas auto mode waits for
	seen     time.Time // when INFO last showed at least replicas connected
	checked  time.Time
	waitAOF  bool // the server has WAITAOF (Redis >= 7.2)
	busy     atomic.Bool
}

// readTimeout is the socket read timeout rdb's pipelines run under (0: none).
func readTimeout(rdb redis.UniversalClient) time.Duration {
	switch r := rdb.(type) {
	case *redis.Client:
		return r.Options().ReadTimeout
	case *redis.ClusterClient:
		return r.Options().ReadTimeout
	}
	return 0
}

// waitBound is the WAIT timeout for an acknowledgement timeout d on a
// client whose reads time out after rt: below rt, with a tenth to spare.
// The WAIT goes out in a pipeline, whose reads go-redis bounds by the
// client's ReadTimeout whatever the command (only a lone Wait gets its own
// read deadline), so a longer WAIT would end as an i/o timeout: the grant's
// outcome unknown and its connection dropped, instead of a grant withdrawn.
func waitBound(d, rt time.Duration) time.Duration {
	if rt > 0 && d > rt*9/10 {
		return max(rt*9/10, time.Millisecond)
	}
	return d
}

// waitSpec is the WAIT a call is sent with; n == 0 means none.
type waitSpec struct {
	n    int
	aof  bool
	ms   int64
	node *ackNode
}

func (w waitSpec) args() []any {
	if w.aof {
		return []any{"waitaof", "0", strconv.Itoa(w.n), strconv.FormatInt(w.ms, 10)}
	}
	return []any{"wait", strconv.Itoa(w.n), strconv.FormatInt(w.ms, 10)}
}

// check reads the WAIT reply: nil when enough replicas confirmed.
func (w waitSpec) check(cmd *redis.Cmd) error {
	if err := cmd.Err(); err != nil {
		return &ReplicationError{Want: w.n, Err: markUncertain(err)}
	}
	var got int64
	switch v := cmd.Val().(type) {
	case int64:
		got = v
	case []any: // WAITAOF: [local, replicas]
		if len(v) == 2 {
			got, _ = v[1].(int64)
		}
	}
	if int(got) >= w.n {
		return nil
	}
	w.node.stale()
	return &ReplicationError{Want: w.n, Got: int(got)}
}

// stale makes the next use read INFO again (a shortfall may mean the
// master lost a replica, or is not the master any more).
func (n *ackNode) stale() {
	n.mu.Lock()
	n.checked = time.Time{}
	n.mu.Unlock()
}

// node returns the entry of the master addressed as addr.
func (a *acker) node(addr string) *ackNode {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := a.nodes[addr]
	if n == nil {
		n = &ackNode{}
		a.nodes[addr] = n
	}
	return n
}

// learn records an INFO (default sections) of the master addressed as
// addr that the Client read anyway.
func (a *acker) learn(addr string, info string) { a.node(addr).apply(info, nil) }

// spec returns the WAIT for a write to the master node, addressed as addr.
func (a *acker) spec(ctx context.Context, node redis.Cmdable, addr string) waitSpec {
	n := a.node(addr)

	n.mu.Lock()
	known, fresh := n.known, time.Since(n.checked) < ackRecheck
	n.mu.Unlock()
	switch {
	case !known:
		// The first write to a master waits for one INFO: it must not go
		// out unacknowledged on a master that has replicas.
		n.refresh(ctx, node)
	case !fresh && n.busy.CompareAndSwap(false, true):
		go func() {
			defer n.busy.Store(false)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.timeout)
			defer cancel()
			n.refresh(rctx, node)
		}()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	w := waitSpec{n: a.want, aof: a.persist && n.waitAOF, ms: a.timeout.Milliseconds(), node: n}
	if w.n == 0 {
		w.n = n.replicas
	}
	return w
}

// refresh reads the node's role and replicas. An INFO that fails leaves
// what was known (and a first one leaves auto mode waiting for one
// replica, the safe guess: a master without any fails that call).
func (n *ackNode) refresh(ctx context.Context, node redis.Cmdable) {
	n.apply(node.Info(ctx, "server", "replication").Result())
}

func (n *ackNode) apply(info string, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := time.Now()
	n.checked = now
	if err != nil {
		if !n.known {
			n.replicas, n.known, n.checked = 1, true, time.Time{}
		}
		return
	}
	f := infoFields(info)
	connected, _ := strconv.Atoi(f["connected_slaves"])
	if f["role"] != "master" {
		connected = 0
	}
	n.waitAOF = versionAtLeast(f["redis_version"], 7, 2)
	switch {
	case f["run_id"] != n.runID || connected >= n.replicas:
		n.replicas, n.seen = connected, now
	case now.Sub(n.seen) >= ackForget:
		n.replicas = connected
	}
	n.runID, n.known = f["run_id"], true
}

// infoFields parses INFO's "key:value" lines.
func infoFields(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// versionAtLeast compares a "major.minor.patch" version.
func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// ackTarget is the master a write of key goes to and how to address it:
// on a Cluster the node's own client (WAIT has no key, and a Cluster
// pipeline would send it to another master), else the Client's.
func (c *Client) ackTarget(ctx context.Context, key string) (redis.UniversalClient, string, error) {
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok {
		return c.rdb, "", nil
	}
	node, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return node, node.Options().Addr, nil
}

// acksNeeded reports whether a lock write of key waits for replicas now:
// false when acknowledgement is off or the key's master has no replica to
// wait for. A master the Client cannot name counts as needing them.
func (c *Client) acksNeeded(ctx context.Context, key string) bool {
	if c.ack == nil {
		return false
	}
	node, addr, err := c.ackTarget(ctx, key)
	if err != nil {
		return true
	}
	return c.ack.spec(ctx, node, addr).n > 0
}

// callAcked is call for a lock write that must reach replicas: the script
// and its WAIT in one pipeline. ack is nil when the write was confirmed or
// needs no confirmation, else a *ReplicationError; the script's own reply
// is on cmd either way.
func (c *Client) callAcked(ctx context.Context, p *preparedCall) (cmd *redis.Cmd, ack error) {
	if c.ack == nil {
		return c.call(ctx, p), nil
	}
	key, _ := p.cmd[3].(string)
	node, addr, err := c.ackTarget(ctx, key)
	if err != nil {
		// Nothing was sent: no master is known for the key.
		cmd = redis.NewCmd(ctx, p.cmd...)
		cmd.SetErr(err)
		return cmd, nil
	}
	w := c.ack.spec(ctx, node, addr)
	if w.n == 0 {
		return c.call(ctx, p), nil
	}
	c.reg.touch(key)
	if c.batch != nil && addr == "" {
		return c.batch.runWait(ctx, p, w)
	}
	cmd, ack = runWithWait(ctx, node, p.cmd, w)
	if cc, ok := c.rdb.(*redis.ClusterClient); ok && (refused(cmd.Err()) || errors.Is(cmd.Err(), ErrUncertain)) {
		// The node no longer serves the slot (MOVED after a failover or a
		// resharding) or is gone: the Cluster client's slot map is stale,
		// and the next call should find the new master.
		cc.ReloadState(context.WithoutCancel(ctx))
	}
	return cmd, ack
}

// runWithWait sends one script call and its WAIT as a pipeline, once (an
// EVALSHA answered NOSCRIPT did not run and is sent again as EVAL, with
// its WAIT).
func runWithWait(ctx context.Context, rdb redis.UniversalClient, args []any, w waitSpec) (*redis.Cmd, error) {
	cmd, wait := pipeWait(ctx, rdb, args, w)
	if wire.IsNoScript(cmd.Err()) {
		if eval, ok := wire.EvalArgs(args); ok {
			cmd, wait = pipeWait(ctx, rdb, eval, w)
		}
	}
	cmd.SetErr(markUncertain(cmd.Err()))
	return cmd, w.check(wait)
}

func pipeWait(ctx context.Context, rdb redis.UniversalClient, args []any, w waitSpec) (cmd, wait *redis.Cmd) {
	pipe := rdb.Pipeline()
	cmd, wait = redis.NewCmd(ctx, args...), redis.NewCmd(ctx, w.args()...)
	_ = pipe.Process(ctx, wire.NoRetryCmd{Cmd: cmd})
	_ = pipe.Process(ctx, wire.NoRetryCmd{Cmd: wait})
	_, _ = pipe.Exec(ctx)
	return cmd, wait
}

// notReplicated is the error of a grant withdrawn for want of replicas.
func notReplicated(op, name string, ack error) error {
	return fmt.Errorf("%w: store: lock %s %q withdrawn: %w", ErrNotObtained, op, name, ack)
}
