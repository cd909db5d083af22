package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// A master dies right after grants, over repeated failovers, on a Cluster
// and behind Sentinel. Each round, two Clients take locks on the master
// that will die, one with replica acknowledgement (the default) and one
// without (ReplicaAcks -1): first while its replica is in sync, then right
// after the master dropped its replica's link (as a network blip does),
// and the master is killed at once. Once a replica took over, a third
// Client tries every lock the first two were told they hold. A success is
// an overlap: two holders at once. With acknowledgement there must be
// none, on any master; without it the overlaps seen are logged (a grant
// the replica never received is lost with the master).
func TestFailoverOverlaps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Cluster and a Sentinel and fails them over")
	}
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		c := redistest.StartCluster(t, &redistest.ClusterOptions{ReplicasPerMaster: 1, NodeTimeout: time.Second,
			Extra: []string{"--cluster-require-full-coverage", "no"}})
		cc := redistest.NewClusterClient(t, c)
		nodes := map[string]*redistest.Server{}
		for _, n := range c.Nodes() {
			nodes[n.Addr] = n
		}
		runFailovers(t, cc, &clusterTopology{cc: cc, nodes: nodes})
	})
	t.Run("sentinel", func(t *testing.T) {
		t.Parallel()
		s := redistest.StartSentinel(t, nil)
		rdb := redistest.NewFailoverClient(t, s)
		runFailovers(t, rdb, &sentinelTopology{s: s, nodes: map[string]*redistest.Server{
			s.Master.Addr: s.Master, s.Replica.Addr: s.Replica}})
	})
}

const (
	failoverRounds = 3
	// failoverBudget stops starting rounds once a topology has run this
	// long, so a slow machine runs fewer rounds rather than a long test.
	failoverBudget = 25 * time.Second
	// locksPerStep is how many locks each Client takes in each step.
	locksPerStep = 20
)

// failoverTopology is what a round needs of a topology.
type failoverTopology interface {
	// master is the server holding tag's slot now, and its replica.
	master(ctx context.Context, tag string) (master, replica *redistest.Server, err error)
	// settle makes the clients look for the master again.
	settle(ctx context.Context)
}

type clusterTopology struct {
	cc    *redis.ClusterClient
	nodes map[string]*redistest.Server
}

func (ct *clusterTopology) master(ctx context.Context, tag string) (*redistest.Server, *redistest.Server, error) {
	ct.cc.ReloadState(ctx)
	node, err := ct.cc.MasterForKey(ctx, "{"+tag+"}")
	if err != nil {
		return nil, nil, err
	}
	return ct.nodes[node.Options().Addr], replicaOf(ctx, node.Options().Addr, ct.nodes), nil
}

func (ct *clusterTopology) settle(ctx context.Context) { ct.cc.ReloadState(ctx) }

type sentinelTopology struct {
	s     *redistest.Sentinel
	nodes map[string]*redistest.Server
}

func (st *sentinelTopology) master(ctx context.Context, _ string) (*redistest.Server, *redistest.Server, error) {
	addr, err := st.s.CurrentMaster(ctx)
	if err != nil {
		return nil, nil, err
	}
	if st.nodes[addr] == nil {
		return nil, nil, fmt.Errorf("sentinel names %s, neither of its servers", addr)
	}
	return st.nodes[addr], replicaOf(ctx, addr, st.nodes), nil
}

func (st *sentinelTopology) settle(context.Context) {}

// replicaOf is the online replica the master at addr lists (INFO
// replication slave0), among nodes; nil when it has none.
func replicaOf(ctx context.Context, addr string, nodes map[string]*redistest.Server) *redistest.Server {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	f := infoFields(rdb.Info(ctx, "replication").Val())
	var ip, port string
	for _, kv := range strings.Split(f["slave0"], ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "ip":
			ip = v
		case "port":
			port = v
		}
	}
	return nodes[ip+":"+port]
}

// failoverClients are the round's three Clients on one topology.
type failoverClients struct {
	on, off, rival *Client
}

func runFailovers(t *testing.T, rdb redis.UniversalClient, topo failoverTopology) {
	ctx := t.Context()
	cl := failoverClients{
		on:    New(rdb, &Options{NoRegistry: true, ReplicaAckTimeout: 300 * time.Millisecond}),
		off:   New(rdb, &Options{NoRegistry: true, ReplicaAcks: -1}),
		rival: New(rdb, &Options{NoRegistry: true, ReplicaAcks: -1}),
	}
	prefix := redistest.Prefix(t)
	start := time.Now()
	var on, off, grantsOn, grantsOff int
	rounds := 0
	for r := 0; r < failoverRounds && time.Since(start) < failoverBudget; r++ {
		tag := fmt.Sprintf("%sr%d", prefix, r)
		res := failoverRound(t, ctx, cl, topo, tag)
		on, off = on+res.overlapsOn, off+res.overlapsOff
		grantsOn, grantsOff = grantsOn+res.grantsOn, grantsOff+res.grantsOff
		rounds++
	}
	t.Logf("%d failovers in %v: with replica acks %d grants reported held, %d overlaps; without %d grants, %d overlaps",
		rounds, time.Since(start).Round(time.Millisecond), grantsOn, on, grantsOff, off)
	if on > 0 {
		t.Errorf("%d overlapping holds with replica acknowledgement on", on)
	}
	if grantsOn == 0 {
		t.Error("no grant with replica acknowledgement was reported held: the test saw nothing")
	}
	// The same failovers must cost acks off something, or they could not
	// tell acks on from off: the cut step's grants reach the master alone.
	if off == 0 {
		t.Errorf("no overlap with replica acknowledgement off (%d grants): the failovers lost nothing, so the check of acks on proves nothing", grantsOff)
	}
}

type roundResult struct {
	grantsOn, grantsOff, overlapsOn, overlapsOff int
}

func failoverRound(t *testing.T, ctx context.Context, cl failoverClients, topo failoverTopology, tag string) roundResult {
	t.Helper()
	// The topology settles first: after a round the old master comes back
	// and Sentinel (or the Cluster) makes it a replica, which on a loaded
	// machine can take a while, and the master named may change meanwhile.
	var victim *redistest.Server
	redistest.EventuallyWithin(t, 60*time.Second, "a master with an online replica", func() bool {
		v, _, err := topo.master(ctx, tag)
		if err != nil || !replicaOnline(ctx, v) {
			return false
		}
		victim = v
		return true
	})
	_, replica, err := topo.master(ctx, tag)
	if err != nil || replica == nil {
		t.Fatalf("replica of %s: %v %v", victim.Addr, replica, err)
	}
	// The acknowledging Client learns the master's replica (its first
	// write to a master reads INFO; a later one refreshes it in the
	// background at most every ackRecheck).
	warm := cl.on.NewLock("{"+tag+"}:warm", nil)
	for _, pause := range []time.Duration{ackRecheck, 100 * time.Millisecond} {
		if err := warm.TryLock(ctx); err == nil {
			_ = warm.Unlock(ctx)
		}
		time.Sleep(pause + 100*time.Millisecond)
	}

	heldOn, heldOff := map[string]*Lock{}, map[string]*Lock{}
	grant := func(step string) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range locksPerStep {
			for _, side := range []struct {
				c    *Client
				held map[string]*Lock
				kind string
			}{{cl.on, heldOn, "on"}, {cl.off, heldOff, "off"}} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l := side.c.NewLock(fmt.Sprintf("{%s}:%s:%s:%d", tag, side.kind, step, i), nil)
					if l.TryLock(ctx) == nil {
						mu.Lock()
						side.held[l.Name()] = l
						mu.Unlock()
					}
				}()
			}
		}
		wg.Wait()
	}
	grant("synced")
	// The replica stalls and the master drops its link (a network blip):
	// the next grants reach the master only, which dies right after them.
	// The replica then comes back and takes over.
	pid := replica.PID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cut := redis.NewClient(&redis.Options{Addr: victim.Addr})
	defer cut.Close()
	if err := cut.Do(ctx, "client", "kill", "type", "replica").Err(); err != nil {
		_ = syscall.Kill(pid, syscall.SIGCONT)
		t.Fatalf("CLIENT KILL TYPE replica on %s: %v", victim.Addr, err)
	}
	grant("cut")
	victim.Pause()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	res := roundResult{grantsOn: len(heldOn), grantsOff: len(heldOff)}
	probe := cl.rival.NewLock("{"+tag+"}:probe", &LockOptions{NoWatchdog: true})
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := probe.TryLock(ctx)
		if err == nil || !refusedOrDown(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new master for %s within 30 s: %v", tag, err)
		}
		time.Sleep(50 * time.Millisecond)
		topo.settle(ctx)
	}
	_ = probe.Unlock(ctx)
	topo.settle(ctx)
	res.overlapsOn = rivalTakes(t, ctx, cl.rival, heldOn)
	res.overlapsOff = rivalTakes(t, ctx, cl.rival, heldOff)
	t.Logf("%s killed: acks on %d held, %d taken again; off %d held, %d taken again",
		victim.Addr, res.grantsOn, res.overlapsOn, res.grantsOff, res.overlapsOff)

	for _, held := range []map[string]*Lock{heldOn, heldOff} {
		for _, l := range held {
			_ = l.Unlock(ctx)
		}
	}
	if err := victim.Resume(); err != nil {
		t.Fatal(err)
	}
	return res
}

// refusedOrDown is an error of a master that is not serving yet.
func refusedOrDown(err error) bool {
	var le *LockedError
	return !errors.As(err, &le)
}

// rivalTakes tries every lock in held with another Client and counts the
// ones it got: overlaps.
func rivalTakes(t *testing.T, ctx context.Context, rival *Client, held map[string]*Lock) int {
	t.Helper()
	n := 0
	for name := range held {
		l := rival.NewLock(name, &LockOptions{NoWatchdog: true})
		var err error
		for try := 0; try < 50; try++ {
			if err = l.TryLock(ctx); err == nil || !refusedOrDown(err) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err == nil {
			n++
			_ = l.Unlock(ctx)
		} else if refusedOrDown(err) {
			t.Errorf("rival on %s: %v", name, err)
		}
	}
	return n
}

// replicaOnline reports whether master is one and has a replica it
// counts (INFO replication state=online), so a round starts replicated.
func replicaOnline(ctx context.Context, master *redistest.Server) bool {
	rdb := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer rdb.Close()
	info, _ := rdb.Info(ctx, "replication").Result()
	return strings.Contains(info, "role:master") && strings.Contains(info, "state=online")
}
