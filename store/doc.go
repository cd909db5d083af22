// Package store is the library applications use to take the distributed
// locks and rate limiters that lockwarden's console shows. Each kind keeps
// the Redis layout of the client it is compatible with, so Go services
// using store, Java services using Redisson and the console work on the
// same objects, on a single node, a Sentinel primary or a Cluster.
//
// Wrap a go-redis client with New. Every kind has a constructor on Client
// that takes the object's key and a nil-safe options pointer (a
// *LockOptions for every lock kind, a *LimiterOptions for every limiter
// kind), and reports invalid input from the handle's first call; every
// method that talks to Redis takes ctx first; every multi-step change is
// one Lua script from package luascripts with all its keys in the object's
// hash slot. Failures are the Err values below (errors.Is) and their error
// types (errors.As).
//
// # Kinds
//
// Locks: TryLock, Lock (waits while ctx allows), Unlock, Refresh (restarts
// the lease now) and HolderID (what Redis holds for the handle: the hash
// field "<client-id>:<owner>", or a token lock's value). A held lock is
// renewed every Lease/3 by its watchdog; LockOptions.NoWatchdog fixes the
// lease, which then runs until Refresh, as a token lock's always does. A
// token, in this package, is a fencing token: an int64 that grows with
// every acquire (FencedLock.Token), which a guarded resource can compare;
// the value a token lock holds identifies its holder, and is its HolderID.
//
//   - NewLock: Redisson's RLock. Hash <name>, field "<client-id>:<owner>"
//     holding the reentry count, PEXPIRE lease; the last release publishes
//     "0" on redisson_lock__channel:{<name>}. store's waiters queue beside
//     it and get the lock handed over in arrival order, a Client's
//     waiters that came within 3 ms of each other side by side
//     (lock_wait.go);
//     Redisson clients take and release the same lock.
//   - NewSpinLock: the same hash and scripts, waiting by retrying every
//     RetryInterval without a subscription, as hand-written Go locks do.
//   - NewRWLock: Redisson's RReadWriteLock. Hash <name> with "mode" and a
//     field per holder (the writer's ends in ":write"), plus a lease key
//     per read level, {<name>}:<holder>:rwlock_timeout:<level>. Reader and
//     Writer are its two sides.
//   - NewFairLock: Redisson's RFairLock. The RLock hash plus the waiter
//     list redisson_lock_queue:{<name>} and their deadlines in
//     redisson_lock_timeout:{<name>}; waiters take the lock in that order.
//   - NewFencedLock: Redisson's RFencedLock. The RLock hash plus the
//     counter redisson_lock_token:{<name>}; Token is the holder's fencing
//     token.
//   - NewTokenLock: a string SET NX PX to a random value (its HolderID),
//     released and refreshed only with that value, as redsync and
//     bsm/redislock keep it.
//
// Limiters: TryAcquire (once), Acquire (waits while ctx allows), both
// answering a Result. The kinds whose configuration lives in Redis are
// configured with TrySetRate (unless configured already: the first
// configuration wins, so every instance may call it at start-up) and
// SetRate (replaces it); a counter's rule is its handle's
// (LimiterOptions.Limit per Window), as its layout keeps none.
//
//   - NewTokenBucket: the "ratelimit:<app>" token bucket, hash <name> with
//     last_mill_second, stored_permits, max_permits, interval (ms per
//     permit) and app, as single-script token-bucket clients write it;
//     TrySetRate, SetRate, Delete. store's scripts read the time from
//     Redis.
//   - NewRedissonLimiter: Redisson's RRateLimiter. Config hash <name>
//     (rate, interval, type), the window's value in {<name>}:value and,
//     since Redisson 3.13.3, each grant in the zset {<name>}:permits (per
//     client, both suffixed ":<client-id>"); LimiterOptions.Mode picks the
//     Redisson version to match. TrySetRate, SetRate.
//   - NewCounter: a string INCRemented per hit and EXPIREd on a window's
//     first hit, as hand-written per-IP limiters keep it.
//
// Beside each object store's scripts keep keys of their own, which other
// clients of the layout never read: the outcome of every attempt in a
// stats hash of 200 ms buckets, a lock's waiter queue, and the hold times
// of the kinds whose layout has no room for them (read-write, token).
// Their names start with "lw:{", carry the object's hash tag, and expire
// on their own. A lock in Redisson's RLock hash keeps its holder's hold
// record, and a mark saying waiters queue, as fields of that hash
// (prefixed "lw:"), which Redisson's scripts never read and its DEL and
// expiry take along.
// A Client also registers itself (application, host, pid, version,
// heartbeat) and announces the names it uses, so the console lists them
// without SCAN (registry.go; Options.NoRegistry turns it off).
//
// Reading, classifying and editing these objects from the outside is the
// console's job, in package store/inspect; store does not import it.
//
// # Owners, waits and deadlocks
//
// A lock's holder is "<client-id>:<owner>". Handles with the same Owner on
// one Client are one actor: they re-enter each other's locks, as threads
// of one id do in Redisson. By default every handle gets a random owner,
// so each handle is an actor of its own. To say "these handles are one
// actor" without passing an Owner to each, put the actor in ctx:
//
//	ctx = store.WithOwner(ctx, "order-42")
//	a.Lock(ctx) // a, b: handles made without an Owner, of any kind
//	b.Lock(ctx) // both held as "<client-id>:order-42"
//
// The console builds its wait-for graph from that id: a waiter whose
// holder id also holds another lock gives the edge "waits for that lock's
// holder", and a cycle is a deadlock. What goes undetected without a
// shared owner: two handles of one request or job with random owners look
// like two unrelated actors, so a request that holds lock A through one
// handle and waits for lock B through another is not joined to its hold
// of A, and an A-B / B-A deadlock between two such requests shows as two
// locks held and two waiters, with no cycle. The same holds across
// Clients: each Client's id is part of the holder, so one actor spread
// over two Clients is two actors. Token locks are held by a random value,
// not an owner, and never join the graph as holders.
//
// Waits are recorded where they happen, in the scripts that grant: the
// hand-off to a queued waiter adds the wait since it queued (Redis time),
// and an attempt after a failed one adds what its client has waited since
// its first attempt, to the lock's 200 ms stats bucket (count per
// histogram class, total, max). The kinds that wait without a queue
// (spin, token, read-write) show each waiting call in
// lw:{<tag>}:pollwait:<name> while it waits. Neither costs a round trip:
// both ride on the attempts a wait sends anyway, and an uncontended
// acquire sends nothing for them.
//
// # No call applied twice
//
// go-redis re-sends a single command after a read timeout or a dropped
// connection (MaxRetries, 3 by default), exactly when the first send may
// already have run; lockwarden's scripts are not idempotent (an acquire
// re-enters, a release drops a level, a limiter grants again). Every script
// call therefore goes out once: each EVALSHA carries go-redis's NoRetry
// marker, which v9.23 honours for single commands and pipelines, and a
// NOSCRIPT reply (the script did not run) is followed by one EVAL of the
// script's text, which cannot answer NOSCRIPT (Script, scriptcall.go). A
// call that got no reply fails with ErrUncertain, an *UncertainError
// wrapping the network or ctx error: it ran once or not at all. This needs no extra
// keys or writes on the hot path (Redisson keeps per-request outcome
// records instead, redisson_unlock_latch:...), keeps every layout as its
// other clients know it, and covers every kind with one mechanism.
//
// An acquire that ends ErrUncertain while the handle held no level
// withdraws whatever the call may have taken, with one release sent once,
// so no lease outlives a caller who was told it failed; if the withdrawal
// loses its reply too, the level left has no watchdog and expires with
// its lease. An uncertain Unlock is not re-sent: the handle may still hold
// that level (Unlock again returns ErrNotHeld once it does not), and a last
// level is no longer renewed, so it ends with its lease at the latest
// (after a local pass whose answer was lost it still is: the waiter that
// went on may be running on it, lock_pass.go). Renewals go out once too;
// the watchdog's next tick is the retry. Applications that run scripts of
// their own get the same with NewScript and Script.Run (and Script.Queue
// with EvalNoScript in a pipeline of their own).
//
// # Replica acknowledgement
//
// Replication is asynchronous, so a master that dies right after granting
// a lock can leave a promoted replica that never saw the grant, and a
// second holder. Like Redisson (checkLockSyncedSlaves, slavesSyncTimeout),
// a reentrant Lock's and a FencedLock's grant and renewal wait for the
// master's replicas by default (a release does not: one a failover loses
// leaves the hold until its lease ends, never a second holder): the script and a WAIT (WAITAOF on
// Redis >= 7.2 with Options.ReplicaAckPersist) go out in one pipeline,
// and a grant fewer
// replicas confirmed within Options.ReplicaAckTimeout (1 s) is withdrawn
// and fails with ErrNotObtained wrapping ErrNotReplicated (replica_ack.go;
// failover_test.go kills masters right after grants and finds no second
// holder). On a master without replicas nothing is waited for; a negative
// Options.ReplicaAcks turns it off.
//
// Cost: no extra round trip, but every lock write waits until the replica
// has applied it, about one master-to-replica round trip more per call (a
// batch of concurrent calls shares one WAIT); the master's replica count
// is read from the INFO the Client sends at first use, then again at most
// once a second in the background while locks are used. A replica that
// just synced counts only after its first acknowledgement (up to a
// second), and a replica whose link broke is waited for during 5 s more,
// so grants fail rather than go unconfirmed in both windows. On a Cluster
// such calls are sent to the key's master directly and are not batched.
// The other lock kinds (SpinLock, RWLock, FairLock, TokenLock) do not wait
// for replicas yet.
//
// A Lock that waits is handed the lock by the release in one step. Without
// replica acknowledgement the hand-off sets the waiter's own lease and the
// waiter returns on its message, sending nothing more; the cost is that a
// waiter that died after refreshing its queue entry can be handed the
// lock and block it up to one lease, as a holder that dies does. With
// acknowledgement the hand-off sets a short claim and the waiter confirms
// it with its WAIT before Lock returns (lock_wait.go).
//
// When the waiter first in the queue is one of the releasing Client's own,
// and no replica has to acknowledge, Unlock lets it go on at once, in
// process, and the release script records the hand-off in the same round
// trip (lock_pass.go): the new holder does not wait for Redis. It runs on
// the releaser's hold until Redis has recorded the pass, so the pass is
// only made while that hold's lease has at least half of it left; if the
// hold turns out to be gone (a force-unlock, a Redis that lost its data),
// both Unlock calls report ErrNotHeld. Only the queue's first waiter is
// ever passed to, and the queue puts a Client's waiters that came within
// 3 ms of each other side by side, so that most releases under contention
// are passes.
// Client.WaitStats counts the passes.
//
// # Migrating
//
// Code written against earlier versions of this package compiles as it
// is, except what these lines change:
//
//   - RunScriptOnce(ctx, rdb, s, keys, argv...): s.Run(ctx, rdb, keys,
//     argv...), s declared with NewScript, which returns a *Script.
//   - FairLockOptions{LockOptions: o, ThreadWaitTime: w}: o with
//     ThreadWaitTime set to w (FairLockOptions is LockOptions).
//   - TokenLock.Token(): TokenLock.HolderID(); Token is FencedLock's
//     fencing token, an int64.
//   - ValidateName(name): the handle's first call refuses the name
//     (ErrInvalid); OwnerFrom(ctx): the owner your code gave WithOwner.
//
// These names still work, deprecated:
//
//   - SpinLockOptions, TokenLockOptions: LockOptions, which they are;
//     TokenLockOptions.Token is LockOptions.Owner.
//   - CounterOptions, RedissonLimiterOptions, TokenBucketOptions:
//     LimiterOptions, which they are.
//   - TokenBucket.Init(ctx, cfg): TrySetRate(ctx, cfg);
//     Modify(ctx, n, ms): SetRate(ctx, Limit{Capacity: n, IntervalMS: ms}).
//   - DefaultSpinLease, DefaultTokenLease: DefaultLockLease.
//   - ErrNotFound: inspect.ErrNotFound; no call of store returns it.
//
// # Lost holds
//
// A lease protects nothing once it runs out while its holder still works
// (a pause, a slow disk, a renewal that could not get through): the next
// holder goes in beside it. Every lock handle has Lost, a channel closed
// when its hold ends without its own Unlock, LostContext, a ctx cancelled
// then (context.Cause matches ErrLeaseLost and says why); a Lock also
// has LostCause. A late Unlock still answers ErrNotHeld and changes
// nothing (lost.go). Nothing is sent or started for them unless asked:
// the first Lost of a hold arms one timer. What each kind can tell:
//
//   - Lock, FencedLock, FairLock (the Client's watchdog) and SpinLock (its
//     renewal timer): a renewal, every lease/3, that finds the holder
//     field gone or another's (the lease ran out, a force-unlock, an
//     eviction, a failover that lost the grant), or no renewal confirmed
//     for a whole lease counted from the send time of the last one that
//     was. A force-unlock or an eviction is told at the next renewal, up
//     to a third of the lease after it.
//   - With NoWatchdog: the lease counted from the send time of the call
//     that set it (grant, re-entry, Refresh), so Lost closes no later than
//     Redis expires the lock, before anyone else can take it. A hand-off
//     sets the lease at a moment the waiter knows only from below; when
//     that bound passes the handle reads the lease left (HEXISTS and PTTL)
//     rather than report a hold it still has. A force-unlock is told at
//     the lease's end or by the next Unlock or Refresh. Handles sharing an
//     Owner each count from their own grants.
//   - RWLock: one signal for both sides of the owner, from its watchdog
//     (or, with NoWatchdog, the lease of its latest grant).
//   - TokenLock: no watchdog, so the lease from the send time of TryLock,
//     Lock or Refresh; Unlock or Refresh finding another value.
//
// None of them can tell that another holder actually went in, or see a
// hold lost while the process itself is paused (the signal comes when it
// runs again). The console sees the other side: its lease violations
// join hold ends with the next grant and the client registry, and the
// release scripts record a release or renewal that comes after its hold
// ended, in the same call that refuses it.
package store
