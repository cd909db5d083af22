// Package inspect is the console's view of the locks and rate limiters
// applications keep in Redis: it finds them (Discover, and the Walker the
// console's tick drives), classifies each key by its layout (Kind), reads
// their holders, waiters, limits and 200 ms outcome counts (Sample), follows
// their release messages (SubscribeEvents), plans and performs the changes
// an admin may make (ForceUnlock, ModifyLimiterWith, ResetCounter), and
// keeps the audit stream of those changes (Audit). It reads what any client
// writes, Redisson and hand-written ones included, not only package store.
//
// Applications never need it: they take locks and permits with package
// store. inspect imports store for its shared errors and application
// scripts; store never imports inspect.
//
// # Discovery
//
// The console never rescans the keyspace on a timer. After one full pass
// at start, a Walker finds new objects inside the one pipelined round trip
// per node that every tick already makes, three ways:
//
//   - announced: store clients add every name they use to the registry's
//     names zset (RegistryNamesKey; token locks and counters with their
//     kind). Each tick reads what was added since the last, so a store
//     object is listed within about a second, without SCAN.
//   - notified: keyspace notifications name the keys written since the
//     last tick (KeyEvents; subscribed on every master). The walker sizes
//     them with HLEN before reading, so a large application hash is never
//     transferred.
//   - reconciled: for everything else, one SCAN page a tick walks the
//     keyspace, paced so that a pass takes WalkOptions.Pass while the
//     console's whole Redis cost stays within WalkOptions.Budget (a share
//     of one core). The walk prices the tick's other commands from INFO
//     commandstats and paces itself on what is left, so more objects to
//     read make the walk slower, never the console's share larger
//     (pace.go). Where a SCAN cannot ride in the tick (a Cluster, or string
//     kinds configured by pattern) full passes run as often as the budget
//     pays for.
//
// A hash the walk found to be no known object is not examined again for a
// few passes (rejects.go), so application hashes are not read on every
// pass. Known objects are read on a cadence (cadence.go): every tick while
// they change, every few seconds once idle, at once when a notification,
// a release message or an ending lease says so, or, for an idle limiter,
// when an HLEN of its stats ring every 2 s finds a new bucket; an idle
// lock with no side keys costs its hash, its lease and one EXISTS
// (sidekeys.go). WalkStatus
// reports the mode, the last pass, what each source found and the measured
// share; BENCHMARKS.md has the figures.
//
// # Families
//
// Many keys of one limiter shape are one family (families.go): the
// counters of one ObjectPatterns.Counters pattern, with GroupCounters, and
// a per-client Redisson limiter's clients. Discovery and the walk leave
// grouped counters out; a FamilyReader reads a bounded page of members a
// tick (FamilyReadsPerTick), and a FamilyBook keeps each family's totals
// and top offenders of the last minute and hour in bounded memory
// (family_book.go).
//
// # Waiters and deadlocks
//
// A lock's waiters are read from the queues that hold them, beside its
// hash in the same pipeline: store's hand-off queue (each waiter's token,
// the holder field it takes when granted, its arrival and its entry's
// deadline; waiters.go) and Redisson's fair queue. store's spin, token and
// read-write locks wait by polling, and each waiting call keeps an entry in
// the lock's poll-waiter hash while it polls (pollwaiters.go). A Redisson RLock or
// read-write lock keeps no queue: its waiters are only the subscribers of
// its channel, counted for held locks a few a tick (subscribers.go).
//
// A waiter whose owner ("<client-uuid>:<owner>", the holder field it would
// take) holds another lock waits for that lock's holder. Deadlocks finds
// the cycles of that wait-for graph over a snapshot's locks, which on a
// Cluster are merged over every master, so a cycle may span masters
// (deadlock.go). Holders are one actor only when they write the same
// holder field: handles of one store.Client with the same Owner, a
// Redisson thread. Two handles with different owners in one goroutine are
// two actors, and a cycle through them goes undetected.
package inspect
