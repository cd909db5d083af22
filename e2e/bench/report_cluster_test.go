package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwarden/lockwarden/store/inspect"
	"github.com/lockwarden/lockwarden/store/redistest"
)

// Case 10: the console's sampler and its unlock events on one node beside
// a 3-master Cluster, side by side in one run. Both topologies are private
// and fresh (nothing else on them), so their figures compare directly.
//
//	LOCKWARDEN_BENCH_CASE=10 go test -run '^TestBenchCase$' -count=1 -v ./e2e/bench/

const (
	topoRounds      = 3
	topoWindow      = 3 * time.Second
	topoTick        = 200 * time.Millisecond // the console's default tick
	topoEventCycles = 200
)

// topoRig is one topology with a command counter on each of its nodes.
type topoRig struct {
	name    string
	rdb     redis.UniversalClient
	masters []*redis.Client // one plain client per master, for INFO
	counts  *nodeCounts
	locks   []string
	lims    []string
}

// nodeCounts counts what a client sends, per node address.
type nodeCounts struct {
	mu sync.Mutex
	by map[string]*nodeCount
}

type nodeCount struct{ calls, pipes, cmds atomic.Int64 }

func (n *nodeCounts) node(addr string) *nodeCount {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.by[addr]
	if c == nil {
		c = &nodeCount{}
		n.by[addr] = c
	}
	return c
}

// total is the round trips (single calls plus pipelines) and commands sent
// to every node so far.
func (n *nodeCounts) total() (roundTrips, cmds int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.by {
		roundTrips += c.calls.Load() + c.pipes.Load()
		cmds += c.cmds.Load()
	}
	return roundTrips, cmds
}

// nodeHook counts into one node's nodeCount.
type nodeHook struct{ c *nodeCount }

func (nodeHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h nodeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.c.calls.Add(1)
		h.c.cmds.Add(1)
		return next(ctx, cmd)
	}
}
func (h nodeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.c.pipes.Add(1)
		h.c.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// topoRigs starts a fresh single node and a fresh 3-master Cluster, each
// with case 10's objects; every node's client counts what it is sent.
func topoRigs(ctx context.Context, t *testing.T) ([]*topoRig, error) {
	s := redistest.StartT(t)
	single := &topoRig{name: "single node", counts: &nodeCounts{by: map[string]*nodeCount{}}}
	sc := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 10 * time.Second})
	sc.AddHook(nodeHook{single.counts.node(s.Addr)})
	single.rdb = sc
	single.masters = []*redis.Client{redis.NewClient(&redis.Options{Addr: s.Addr})}

	c := redistest.StartCluster(t, nil)
	cluster := &topoRig{name: "3-master Cluster", counts: &nodeCounts{by: map[string]*nodeCount{}}}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ReadTimeout: 10 * time.Second})
	// Registered before the first command, so every node client has it.
	cc.OnNewNode(func(n *redis.Client) { n.AddHook(nodeHook{cluster.counts.node(n.Options().Addr)}) })
	cluster.rdb = cc
	for _, m := range c.Masters {
		cluster.masters = append(cluster.masters, redis.NewClient(&redis.Options{Addr: m.Addr}))
	}
	rigs := []*topoRig{single, cluster}
	t.Cleanup(func() {
		for _, r := range rigs {
			r.rdb.Close()
			for _, m := range r.masters {
				m.Close()
			}
		}
	})
	for _, r := range rigs {
		var err error
		if r.locks, r.lims, err = makeTopoObjects(ctx, r.rdb, "bench:c10:"); err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
	}
	return rigs, nil
}

// cpuSeconds is Redis CPU (used_cpu_sys + used_cpu_user) summed over r's
// masters.
func (r *topoRig) cpuSeconds(ctx context.Context) (float64, error) {
	var sum float64
	for _, m := range r.masters {
		u, err := readRedisUsage(ctx, m)
		if err != nil {
			return 0, err
		}
		sum += u.cpu
	}
	return sum, nil
}

// topoResult is one round of case 10 on one topology.
type topoResult struct {
	cmds, roundTrips, perNode float64 // per tick
	p50, p99                  float64 // one tick's Sample, ms
	cpuPct                    float64 // Redis CPU over the masters, % of one core, idle rate subtracted
	eventP50, eventP99        float64 // unlock to event, ms
}

// topoRound samples r's objects every topoTick for topoWindow, after a
// window as long without the sampler for Redis's idle CPU, then measures
// topoEventCycles unlock events.
func topoRound(ctx context.Context, r *topoRig, round int) (topoResult, error) {
	in := inspect.New(r.rdb, nil)
	if _, err := in.Sample(ctx, r.locks, r.lims); err != nil { // loads scripts, slot map, connections
		return topoResult{}, err
	}
	idle0, err := r.cpuSeconds(ctx)
	if err != nil {
		return topoResult{}, err
	}
	t0 := time.Now()
	if !sleepCtx(ctx, topoWindow) {
		return topoResult{}, ctx.Err()
	}
	idle1, err := r.cpuSeconds(ctx)
	if err != nil {
		return topoResult{}, err
	}
	idleRate := (idle1 - idle0) / time.Since(t0).Seconds()

	rt0, cmd0 := r.counts.total()
	cpu0, err := r.cpuSeconds(ctx)
	if err != nil {
		return topoResult{}, err
	}
	var took []time.Duration
	t0 = time.Now()
	for next := t0; time.Since(t0) < topoWindow; next = next.Add(topoTick) { // bounded by the window
		if d := time.Until(next); d > 0 && !sleepCtx(ctx, d) {
			return topoResult{}, ctx.Err()
		}
		start := time.Now()
		if _, err := in.Sample(ctx, r.locks, r.lims); err != nil {
			return topoResult{}, err
		}
		took = append(took, time.Since(start))
	}
	wall := time.Since(t0).Seconds()
	cpu1, err := r.cpuSeconds(ctx)
	if err != nil {
		return topoResult{}, err
	}
	rt1, cmd1 := r.counts.total()
	ticks := float64(len(took))
	res := topoResult{
		cmds:       float64(cmd1-cmd0) / ticks,
		roundTrips: float64(rt1-rt0) / ticks,
		p50:        percentileMS(took, 50),
		p99:        percentileMS(took, 99),
		cpuPct:     100 * ((cpu1-cpu0)/wall - idleRate),
	}
	res.perNode = res.roundTrips / float64(len(r.masters))

	lat, err := unlockEventLatencies(ctx, r.rdb, fmt.Sprintf("bench:c10:event:%d", round), topoEventCycles)
	if err != nil {
		return topoResult{}, fmt.Errorf("unlock events: %w", err)
	}
	res.eventP50, res.eventP99 = percentileMS(lat, 50), percentileMS(lat, 99)
	return res, nil
}

// clusterReport runs case 10 and writes its section through w.
func clusterReport(ctx context.Context, t *testing.T, w func(string, ...any)) {
	rigs, err := topoRigs(ctx, t)
	if err != nil {
		t.Fatalf("case 10: %v", err)
	}
	res := make([][]topoResult, len(rigs))
	for round := range topoRounds {
		for i, r := range rigs { // interleaved: both see the same machine load
			v, err := topoRound(ctx, r, round)
			if err != nil {
				t.Fatalf("case 10 %s: %v", r.name, err)
			}
			res[i] = append(res[i], v)
		}
	}
	w("## 10. Single node beside a 3-master Cluster: sampler cost and unlock events\n\n")
	w("%d token buckets and %d held locks, read by `Inspector.Sample` every %v for %v (what one console tick reads; on the Cluster one pipeline per master, run concurrently), "+
		"on a fresh private redis-server and a fresh private 3-master Cluster (no replicas) on the same machine, the two interleaved in each of %d rounds. "+
		"Commands and round trips are counted by a hook on each node's client; Redis CPU is used_cpu_sys+user summed over the masters, minus the same masters' rate in an idle window just before. "+
		"Unlock → event is %d store `Unlock` calls on one lock, each timed until the console's event stream (inspect.SubscribeEvents; on the Cluster SSUBSCRIBE per master and classic pub/sub, one event kept) delivers it. Median (min–max) of the rounds.\n\n",
		topoBuckets, topoLocks, topoTick, topoWindow, topoRounds, topoEventCycles)
	col := seriesOf[topoResult]
	rows := []struct {
		label string
		prec  int
		f     func(topoResult) float64
	}{
		{"commands sent / tick", 0, func(r topoResult) float64 { return r.cmds }},
		{"round trips / tick, all nodes", 2, func(r topoResult) float64 { return r.roundTrips }},
		{"round trips / tick / node", 2, func(r topoResult) float64 { return r.perNode }},
		{"Sample ms p50", 2, func(r topoResult) float64 { return r.p50 }},
		{"Sample ms p99", 2, func(r topoResult) float64 { return r.p99 }},
		{"Redis CPU, % of one core (sum over masters)", 1, func(r topoResult) float64 { return r.cpuPct }},
		{"unlock → event p50 (ms)", 3, func(r topoResult) float64 { return r.eventP50 }},
		{"unlock → event p99 (ms)", 3, func(r topoResult) float64 { return r.eventP99 }},
	}
	w("| figure |")
	for _, r := range rigs {
		w(" %s |", r.name)
	}
	w("\n|---|---|---|\n")
	for _, row := range rows {
		w("| %s |", row.label)
		for i := range rigs {
			w(" %s |", cell(col(res[i], row.f), row.prec))
		}
		w("\n")
	}
	w("\nOn the Cluster the objects spread over the three masters, so each master does about a third of the work; the sum shows what the split costs in total.\n\n")
}
