package bench

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/lockwarden/lockwarden/store"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// replicaPair is case 1's second Redis: a private master with one replica
// online, so that store's replica acknowledgement (store/replica_ack.go)
// has a replica to wait for. The case that starts it stops it: its two
// processes, and the goroutines that wait on them, would otherwise run on
// through every later case.
type replicaPair struct {
	master, replica *redistest.Server
	env             *env          // clients on the master
	admin           *redis.Client // reads the master's commandstats
}

func startReplicaPair(ctx context.Context, e *env) (*replicaPair, error) {
	// Redis delays a replica's first sync by 5 s unless told not to.
	m, err := redistest.Start("--repl-diskless-sync-delay", "0")
	if err != nil {
		return nil, err
	}
	host, port, _ := net.SplitHostPort(m.Addr)
	r, err := redistest.Start("--replicaof", host, port)
	if err != nil {
		m.Stop()
		return nil, err
	}
	p := &replicaPair{master: m, replica: r, env: &env{t: e.t, addr: m.Addr},
		admin: redis.NewClient(&redis.Options{Addr: m.Addr})}
	// WAIT counts a replica once the master has it online (after its
	// first ACK), not when the replica's own link is up.
	deadline := time.Now().Add(10 * time.Second)
	for { // bounded: 10 s
		info, _ := p.admin.Info(ctx, "replication").Result()
		if strings.Contains(info, "state=online") {
			return p, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.stop()
			return nil, fmt.Errorf("replica of %s not online: %s", m.Addr, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *replicaPair) stop() {
	p.admin.Close()
	p.replica.Stop()
	p.master.Stop()
}

// ackedPeer is a lock implementation on the replicated master, and whether
// its writes are acknowledged by the replica.
type ackedPeer struct {
	lockPeer
	acked bool
}

// replicaPeers are case 1's rows with a replica attached: lockwarden with
// its defaults (which wait for every replica the master has), lockwarden
// with the acknowledgement off, and the peers, which have none.
var replicaPeers = append([]ackedPeer{
	{lockwardenPeer("lockwarden, acks on (defaults)", nil), true},
	{lockwardenPeer("lockwarden, ReplicaAcks: -1", &store.Options{ReplicaAcks: -1}), false},
}, ackedPeer{lockPeers[1], false}, ackedPeer{lockPeers[2], false})

// ackedResult is one case 1 run on the replicated master.
type ackedResult struct {
	rate         float64 // pairs/s
	waitsPerPair float64 // WAIT and WAITAOF the master executed per pair
}

// uncontendedAcked is case 1 on the replicated master. It fails when the
// master's commandstats contradict the row's label, so that a row never
// measures something other than what it says: an acknowledged run must
// have executed WAITs (at C=1 one per grant, none per release; with more
// goroutines a batch of concurrent calls ends with one WAIT that covers
// them all, see store/batch.go), any other run none.
func uncontendedAcked(ctx context.Context, pair *replicaPair, p ackedPeer, conc int, d time.Duration) (ackedResult, error) {
	before, err := readRedisUsage(ctx, pair.admin)
	if err != nil {
		return ackedResult{}, err
	}
	rate, n, err := uncontendedPairs(ctx, pair.env, p.lockPeer, conc, d)
	if err != nil {
		return ackedResult{}, err
	}
	after, err := readRedisUsage(ctx, pair.admin)
	if err != nil {
		return ackedResult{}, err
	}
	if n == 0 {
		return ackedResult{}, fmt.Errorf("%s: no pair in %v", p.name, d)
	}
	waits := after.callsOf(before, "wait", "waitaof")
	r := ackedResult{rate: rate, waitsPerPair: float64(waits) / float64(n)}
	if p.acked != (waits > 0) || (p.acked && conc == 1 && (waits < n || waits > n+2)) {
		return r, fmt.Errorf("%s: the master executed %d WAIT/WAITAOF for %d lock + unlock pairs", p.name, waits, n)
	}
	return r, nil
}
