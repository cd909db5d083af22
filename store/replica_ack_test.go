package store

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockwarden/lockwarden/store/internal/wire"
	"github.com/lockwarden/lockwarden/store/redistest"
	"github.com/redis/go-redis/v9"
)

// replicated is a private master with one synced replica.
type replicated struct {
	master, replica *redistest.Server
	rdb             *redis.Client // to the master
}

func startReplicated(t *testing.T) *replicated {
	t.Helper()
	// Redis 7 delays a replica's first sync by 5 s unless told not to.
	m := redistest.StartT(t, "--repl-diskless-sync-delay", "0")
	host, port, _ := net.SplitHostPort(m.Addr)
	r := redistest.StartT(t, "--replicaof", host, port)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr})
	t.Cleanup(func() { rdb.Close() })
	rr := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rr.Close() })
	// The replica's own link is up before the master counts it: a master
	// puts a replica that synced diskless online on its first ACK, and
	// until then WAIT does not count it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, _ := rdb.Info(t.Context(), "replication").Result()
		if strings.Contains(info, "state=online") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica of %s not online: %s", m.Addr, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Load the lock scripts, so that counts of WAITs are not doubled by
	// a NOSCRIPT and its EVAL.
	c := New(rdb, &Options{NoRegistry: true, ReplicaAcks: -1})
	l := c.NewLock(redistest.Prefix(t)+"warm", nil)
	if err := l.TryLock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	return &replicated{master: m, replica: r, rdb: rdb}
}

// freeze stops the replica's process (SIGSTOP) until t ends: it stays
// connected, so the master still counts it, but confirms nothing.
func (r *replicated) freeze(t *testing.T) {
	t.Helper()
	pid := r.replica.PID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
}

// ackClients are two Clients with one ID (so their handles with one Owner
// are one holder): patient, for steps that must succeed on a loaded
// machine, and hasty, whose short timeout makes a silent replica's
// failures quick.
func ackClients(rdb *redis.Client) (patient, hasty *Client) {
	id := newUUID()
	patient = New(rdb, &Options{ID: id, NoRegistry: true, ReplicaAckTimeout: 10 * time.Second})
	hasty = New(rdb, &Options{ID: id, NoRegistry: true, ReplicaAckTimeout: 300 * time.Millisecond})
	return patient, hasty
}

func waits(t *testing.T, rdb *redis.Client) int64 {
	calls := redistest.CommandCalls(t, rdb)
	return calls["wait"] + calls["waitaof"]
}

// By default a grant waits for the master's replica in the same pipeline:
// the replica has the lock once TryLock returns.
func TestReplicaAckDefaultWaitsForTheReplica(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 10*time.Second)
	c, _ := ackClients(r.rdb)
	name := redistest.Prefix(t) + "lock"
	l := c.NewLock(name, nil)
	before := waits(t, r.rdb)
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.UnlockAtEnd(t, l)
	if got := waits(t, r.rdb) - before; got != 1 {
		t.Errorf("WAIT sent %d times for one grant, want 1", got)
	}
	rr := redis.NewClient(&redis.Options{Addr: r.replica.Addr})
	defer rr.Close()
	if n, err := rr.HExists(ctx, name, l.HolderID()).Result(); err != nil || !n {
		t.Errorf("replica does not have the grant just reported: %v %v", n, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A grant the replica does not confirm in time is withdrawn and reported
// as not obtained; before ReplicaAcks it was reported held.
func TestReplicaAckUnconfirmedGrantIsWithdrawn(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 10*time.Second)
	patient, c := ackClients(r.rdb)
	name := redistest.Prefix(t) + "lock"
	if err := patient.NewLock(name+":held", &LockOptions{Owner: "o"}).TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	held := c.NewLock(name+":held", &LockOptions{Owner: "o"})
	r.freeze(t)

	l := c.NewLock(name, nil)
	err := l.TryLock(ctx)
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("TryLock with a silent replica = %v, want ErrNotObtained and ErrNotReplicated", err)
	}
	var re *ReplicationError
	if !errors.As(err, &re) || re.Want != 1 || re.Got != 0 {
		t.Errorf("error %v: want a *ReplicationError of 0 of 1", err)
	}
	if n := r.rdb.Exists(ctx, name).Val(); n != 0 {
		t.Errorf("the unconfirmed grant is still on the master")
	}
	if err := l.Lock(ctx); !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrNotReplicated) {
		t.Errorf("Lock with a silent replica = %v", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("Unlock after a withdrawn grant = %v, want ErrNotHeld", err)
	}
	// A release does not wait for the replica: it is applied on the
	// master and answers at once, with no WAIT sent.
	before := waits(t, r.rdb)
	if err := held.Unlock(ctx); err != nil {
		t.Errorf("Unlock with a silent replica = %v, want nil (releases do not wait)", err)
	}
	if got := waits(t, r.rdb) - before; got != 0 {
		t.Errorf("the release sent %d WAITs", got)
	}
	if n := r.rdb.Exists(ctx, name+":held").Val(); n != 0 {
		t.Errorf("the release did not apply on the master")
	}
	if err := held.Refresh(ctx); !errors.Is(err, ErrNotHeld) {
		t.Errorf("Refresh after the release = %v, want ErrNotHeld", err)
	}
}

// A fenced lock's grant (its own script) waits for the replica too; an
// unconfirmed one is withdrawn.
func TestReplicaAckFencedLock(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 20*time.Second)
	patient, hasty := ackClients(r.rdb)
	name := redistest.Prefix(t) + "fenced"
	f := patient.NewFencedLock(name, nil)
	before := waits(t, r.rdb)
	if err := f.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if waits(t, r.rdb) == before {
		t.Error("a fenced grant sent no WAIT")
	}
	if err := f.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r.freeze(t)
	err := hasty.NewFencedLock(name, nil).TryLock(ctx)
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("fenced TryLock with a silent replica = %v", err)
	}
	if n := r.rdb.Exists(ctx, name).Val(); n != 0 {
		t.Error("the unconfirmed fenced grant is still on the master")
	}
}

// Concurrent grants share one WAIT per batch, and each unconfirmed one is
// withdrawn.
func TestReplicaAckBatchedGrants(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 20*time.Second)
	patient, hasty := ackClients(r.rdb)
	prefix := redistest.Prefix(t)
	run := func(c *Client, want error) {
		var wg sync.WaitGroup
		errs := make([]error, 32)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := c.NewLock(prefix+"l"+string(rune('a'+i)), &LockOptions{NoWatchdog: true, Lease: 5 * time.Second})
				errs[i] = l.TryLock(ctx)
				if errs[i] == nil {
					errs[i] = l.Unlock(ctx)
				}
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if !errors.Is(err, want) && err != want {
				t.Errorf("lock %d: %v, want %v", i, err, want)
			}
		}
	}
	before := waits(t, r.rdb)
	run(patient, nil)
	if got := waits(t, r.rdb) - before; got == 0 || got > 64 {
		t.Errorf("%d WAITs for 64 writes", got)
	}
	r.freeze(t)
	run(hasty, ErrNotReplicated)
	if keys := r.rdb.Keys(ctx, prefix+"l*").Val(); len(keys) != 0 {
		t.Errorf("unconfirmed grants left on the master: %v", keys)
	}
}

// A replica whose link just broke is still waited for (auto mode forgets
// a replica only after ackForget): a grant in that window is not reported
// held.
func TestReplicaAckRemembersAReplicaThatJustLeft(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 10*time.Second)
	_, c := ackClients(r.rdb)
	name := redistest.Prefix(t) + "lock"
	l := c.NewLock(name, nil)
	if err := c.decidePubsub(ctx); err != nil { // the Client's INFO: one replica
		t.Fatal(err)
	}
	r.replica.Pause()
	for r.rdb.Info(ctx, "replication").Val() != "" && strings.Contains(r.rdb.Info(ctx, "replication").Val(), "connected_slaves:1") {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(ackRecheck + 100*time.Millisecond) // past a recheck that saw none
	_ = l.TryLock(ctx)                            // lets the background recheck run
	time.Sleep(100 * time.Millisecond)
	if err := l.TryLock(ctx); !errors.Is(err, ErrNotReplicated) {
		t.Errorf("TryLock right after the replica left = %v, want ErrNotReplicated", err)
	}
}

// Off (negative) sends no WAIT; auto on a master without replicas sends
// none either; both take the lock.
func TestReplicaAckOffAndNoReplicas(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 10*time.Second)
	r.freeze(t)
	before := waits(t, r.rdb)
	off := New(r.rdb, &Options{NoRegistry: true, ReplicaAcks: -1})
	l := off.NewLock(redistest.Prefix(t)+"off", nil)
	if err := l.TryLock(ctx); err != nil {
		t.Fatalf("TryLock with acks off: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := waits(t, r.rdb) - before; got != 0 {
		t.Errorf("acks off sent %d WAITs", got)
	}

	single := redistest.Client(t)
	before = waits(t, single)
	l = New(single, &Options{NoRegistry: true}).NewLock(redistest.Prefix(t)+"single", nil)
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if got := waits(t, single) - before; got != 0 && redistest.SharedCluster() == nil {
		t.Errorf("a master without replicas got %d WAITs", got)
	}
}

// ReplicaAckPersist asks for WAITAOF where the server has it and falls
// back to WAIT before Redis 7.2.
func TestReplicaAckPersistFallsBack(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 10*time.Second)
	c := New(r.rdb, &Options{NoRegistry: true, ReplicaAckPersist: true, ReplicaAcks: 1, ReplicaAckTimeout: 10 * time.Second})
	l := c.NewLock(redistest.Prefix(t)+"lock", nil)
	if err := l.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	calls := redistest.CommandCalls(t, r.rdb)
	info := infoFields(r.rdb.Info(ctx, "server").Val())
	if versionAtLeast(info["redis_version"], 7, 2) {
		if calls["waitaof"] == 0 {
			t.Errorf("Redis %s has WAITAOF, none sent: %v", info["redis_version"], calls)
		}
	} else if calls["wait"] == 0 || calls["waitaof"] != 0 {
		t.Errorf("Redis %s: want WAIT, got %v", info["redis_version"], calls)
	}
}

// A hand-off the waiter cannot get confirmed is given back: the waiter's
// Lock fails and it holds nothing.
func TestReplicaAckHandOffUnconfirmed(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 15*time.Second)
	name := redistest.Prefix(t) + "lock"
	patient, hasty := ackClients(r.rdb)
	if err := patient.NewLock(name, &LockOptions{Owner: "a"}).TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	a := hasty.NewLock(name, &LockOptions{Owner: "a"})
	b := New(r.rdb, &Options{NoRegistry: true, ReplicaAckTimeout: 300 * time.Millisecond}).NewLock(name, nil)
	done := make(chan error, 1)
	go func() { done <- b.Lock(ctx) }()
	for r.rdb.ZCard(ctx, wire.LockQueueKey(name)).Val() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	r.freeze(t)
	if err := a.Unlock(ctx); err != nil {
		t.Errorf("Unlock = %v, want nil (a release does not wait; the waiter confirms its hand-off)", err)
	}
	if err := <-done; !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrNotReplicated) {
		t.Errorf("waiter's Lock = %v, want ErrNotObtained and ErrNotReplicated", err)
	}
	if h := r.rdb.HGetAll(ctx, name).Val(); len(h) != 0 {
		t.Errorf("lock still held after the unconfirmed hand-off was given back: %v", h)
	}
}

// With a replica to wait for, a waiter's entry carries only the short
// claim and the waiter confirms the hand-off (its own lease, and a WAIT)
// before Lock returns, so no hand-off a failover could lose is reported
// held. Without a replica the hand-off alone is the grant
// (TestLockHandoffSetsWaitersOwnLease).
func TestReplicaAckHandOffIsConfirmed(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 15*time.Second)
	name := redistest.Prefix(t) + "lock"
	patient, _ := ackClients(r.rdb)
	holder := patient.NewLock(name, nil)
	if err := holder.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := holder.Refresh(ctx); err != nil { // loads lock_renew
		t.Fatal(err)
	}
	waiter := New(r.rdb, &Options{NoRegistry: true, ReplicaAckTimeout: 10 * time.Second}).NewLock(name, nil)
	redistest.UnlockAtEnd(t, waiter)
	done := make(chan error, 1)
	go func() { done <- waiter.Lock(ctx) }()
	for _, entry := range queuedEntries(t, ctx, r.rdb, name, 1) {
		if lease := entryLease(t, entry); lease > handoffLease {
			t.Fatalf("queued entry %q carries %v, want a claim of at most %v", entry, lease, handoffLease)
		}
	}
	before := redistest.CommandCalls(t, r.rdb)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	calls := diffCalls(before, redistest.CommandCalls(t, r.rdb))
	// HMGET: the hand-off's of its wait stats, and the confirmation's of
	// the waiter's field (lock_renew.lua).
	// One WAIT: the waiter's confirmation; the release does not wait.
	if calls["evalsha"] != 2 || calls["hmget"] != 2 || calls["wait"]+calls["waitaof"] != 1 {
		t.Errorf("want the release and the waiter's confirmation, and only the confirmation's WAIT: %v", calls)
	}
	if pttl := r.rdb.PTTL(ctx, name).Val(); pttl <= handoffLease {
		t.Errorf("lease after the confirmed hand-off: PTTL = %v, want the waiter's own", pttl)
	}
	rr := redis.NewClient(&redis.Options{Addr: r.replica.Addr})
	defer rr.Close()
	if ok, err := rr.HExists(ctx, name, waiter.HolderID()).Result(); err != nil || !ok {
		t.Errorf("replica does not have the hand-off Lock reported: %v %v", ok, err)
	}
}

// The registry record says whether the client's grants wait for replicas.
func TestReplicaAckSettingInRegistry(t *testing.T) {
	rdb := redistest.Client(t)
	for _, acks := range []int{-5, 0, 2} {
		c := New(rdb, &Options{ReplicaAcks: acks})
		var raw string
		for deadline := time.Now().Add(5 * time.Second); raw == "" && time.Now().Before(deadline); {
			raw = rdb.HGet(t.Context(), wire.ClientsKey, c.ID()).Val()
			time.Sleep(5 * time.Millisecond)
		}
		var rec struct {
			ReplicaAcks *int `json:"replica_acks"`
		}
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			t.Fatal(err)
		}
		want := max(acks, -1)
		if rec.ReplicaAcks == nil || *rec.ReplicaAcks != want {
			t.Errorf("ReplicaAcks %d recorded as %v, want %d", acks, rec.ReplicaAcks, want)
		}
		_ = c.Close()
	}
}

// A call sent to a Cluster node directly (as acknowledged lock writes are)
// that meets MOVED ran nothing: it is a refusal, and an acquire refused so
// is "not obtained".
func TestReplicaAckMovedIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Cluster")
	}
	c := redistest.StartCluster(t, nil)
	cc := redistest.NewClusterClient(t, c)
	ctx := redistest.Context(t, 20*time.Second)
	name := redistest.Prefix(t) + "lock"
	owner, err := cc.MasterForKey(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	var other *redis.Client
	for _, m := range c.Masters {
		if m.Addr != owner.Options().Addr {
			other = redis.NewClient(&redis.Options{Addr: m.Addr})
			defer other.Close()
			break
		}
	}
	l := New(cc, &Options{NoRegistry: true}).NewLock(name, nil)
	cmd, _ := runWithWait(ctx, other, l.tryCall.cmd, waitSpec{n: 1, ms: 100, node: &ackNode{}})
	if !redis.HasErrorPrefix(cmd.Err(), "MOVED") {
		t.Fatalf("EVALSHA on a node that does not serve the slot: %v, want MOVED", cmd.Err())
	}
	if err := l.scriptErr("acquire", cmd.Err()); !refused(cmd.Err()) || !errors.Is(err, ErrNotObtained) {
		t.Errorf("MOVED: refused %v, acquire error %v; want a refusal and ErrNotObtained", refused(cmd.Err()), err)
	}
}

// A release never waits behind grants that wait for a silent replica: the
// batcher keeps calls that end with a WAIT in a lane of their own
// (store/batch.go). With one lane, two grants on the wire took both slots
// and the release queued until their WAIT timed out.
func TestReplicaAckReleaseDoesNotQueueBehindWaits(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 30*time.Second)
	// WAITs of up to 10 s, under a read timeout that lets them run.
	rdb := redis.NewClient(&redis.Options{Addr: r.master.Addr, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { rdb.Close() })
	c := New(rdb, &Options{NoRegistry: true, ReplicaAckTimeout: 10 * time.Second})
	prefix := redistest.Prefix(t)
	held := c.NewLock(prefix+"held", nil)
	if err := held.TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	r.freeze(t)
	grants := make(chan error, 2)
	for i := range 2 {
		l := c.NewLock(prefix+"grant"+string(rune('a'+i)), nil)
		go func() {
			err := l.TryLock(ctx)
			if err == nil {
				err = l.Unlock(ctx)
			}
			grants <- err
		}()
	}
	redistest.Eventually(t, "a grant blocked in WAIT on the master, the other on the wire or queued", func() bool {
		info, _ := r.rdb.Info(ctx, "clients").Result()
		c.batch.mu.Lock()
		placed := c.batch.acked.inFlight + len(c.batch.acked.queue)
		c.batch.mu.Unlock()
		return placed == 2 && !strings.Contains(info, "blocked_clients:0\r")
	})
	uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := held.Unlock(uctx); err != nil {
		t.Fatalf("release while two grants wait for the replica: %v", err)
	}
	if n, _ := r.rdb.Exists(ctx, prefix+"held").Result(); n != 0 {
		t.Fatal("the lock is still held after its release returned")
	}
	_ = syscall.Kill(r.replica.PID(), syscall.SIGCONT)
	for range 2 {
		if err := <-grants; err != nil {
			t.Errorf("grant once the replica woke: %v", err)
		}
	}
}

// A WAIT longer than the client's ReadTimeout would outlive the pipeline's
// read deadline: the grant ended as an i/o timeout (outcome unknown, the
// connection dropped) instead of a grant withdrawn. The WAIT is held under
// the read timeout (waitBound).
func TestReplicaAckWaitStaysUnderTheReadTimeout(t *testing.T) {
	r := startReplicated(t)
	ctx := redistest.Context(t, 30*time.Second)
	rdb := redis.NewClient(&redis.Options{Addr: r.master.Addr, ReadTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	c := New(rdb, &Options{NoRegistry: true, ReplicaAckTimeout: 5 * time.Second})
	name := redistest.Prefix(t) + "lock"
	r.freeze(t)
	err := c.NewLock(name, nil).TryLock(ctx)
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("grant no replica confirmed: %v, want ErrNotObtained wrapping ErrNotReplicated", err)
	}
	if n, _ := r.rdb.Exists(ctx, name).Result(); n != 0 {
		t.Fatal("the unconfirmed grant was not withdrawn")
	}
}
