// Package inspect is the console's view of the locks and rate limiters
// applications keep in Redis: the model (what a lock, a limiter, a waiter,
// a family, an event is), how each kind is recognised and read, and the
// Inspector the console calls to read them (Sample, GetLock, GetLimiter),
// change them (ForceUnlock, ModifyLimiterWith, ResetCounter, ReleaseAll)
// and follow them (SubscribeEvents, Nodes, Audit). It reads what any
// client writes, Redisson and hand-written ones included, not only package
// store. Applications never need it: they take locks and permits with
// package store, which never imports inspect.
//
// # Where things are
//
//   - The model: model.go (kinds, locks, limiters, holders, waiters,
//     counts, events), families.go, discovery.go (what the walk reports),
//     clients.go (the client registry, who holds what).
//   - Recognising a kind: classify.go (by a hash's fields), patterns.go
//     (strings, by configured pattern or a store client's announcement),
//     candidates.go (keys of unknown kind: hashes, strings, sorted sets).
//   - Other libraries' conventions (ShedLock, Laravel, python-redis-lock,
//     sidekiq-unique-jobs, Symfony Lock, BullMQ, Spring, DistributedLock;
//     bottleneck, express-rate-limit, Upstash, Envoy): package conv, one
//     file each, conv/<name>.go, with its layout, its parse, and its
//     force-unlock or reset as the library does it; conventions.go turns
//     what conv found into the model, conv_read.go reads them in a sample
//     and by key type (GetLock, GetLimiter).
//   - Reading: sample.go (a tick's one pipelined read per node) and
//     sample_kinds.go (one read/parse pair per kind); enrich.go and
//     sidekeys.go (a lock's side keys, lightly for an idle one), waiters.go,
//     pollwaiters.go, subscribers.go (its waiters), redisson_state.go
//     (Redisson limiter windows), stats.go and waits.go (the rolling
//     window and wait windows, from package stats' ring maths).
//   - Changing: lock_console.go (GetLock, ForceUnlock and its plan),
//     limiter_console.go (GetLimiter, ModifyLimiterWith, ResetCounter),
//     clients.go (ReleaseAll); the audit stream of changes is package audit
//     (audit.go keeps its names reachable here).
//   - Following: events.go (unlock messages), nodes.go (masters that do
//     not answer), deadlock.go (the wait-for graph, searched by package
//     deadlock).
//
// Rooms of their own import inspect, never the reverse, and take the few
// Inspector methods they need as an interface: walk (discovery and the
// read cadence, walk.Source), family (limiter families, family.Source) and
// whatif (a limiter's recorded demand replayed at another rate). What they
// share with the console's callers, the model and what a tick reports
// (Sample, WalkStep, FamilyReading), stays here. Below inspect, knowing
// nothing of Redis' lock layouts: audit (the console's audit streams),
// clients (the client registry's records), deadlock (cycles of a wait-for
// graph), fault (the console's error type), stats (the stats ring's maths
// and wait windows), internal/nodes (a deployment's masters, pipelines),
// internal/pubsub (pattern and sharded subscriptions, subscriber counts),
// internal/hashread (a key read by name at an object's cost) and
// internal/glob (Redis glob matching); inspect keeps, as aliases, the
// names of theirs its callers use. internal/inspecttest helps the tests.
//
// # Discovery
//
// The console never rescans the keyspace on a timer. After one full pass
// at start, a walk.Walker finds new objects inside the one pipelined round
// trip per node every tick already makes (a Rider of SampleWith): names
// store clients announce (RegistryNamesKey), names keyspace notifications
// report, and a SCAN page a tick paced to a Redis CPU budget. Known objects
// are read on a cadence: every tick while they change, every few seconds
// once idle. Package walk's doc has the details.
//
// # Families
//
// Many keys of one limiter shape are one family (families.go): the
// counters of one ObjectPatterns.Counters pattern, with GroupCounters, and
// a per-client Redisson limiter's clients. Discovery leaves grouped
// counters out; package family reads a bounded page of members a tick and
// keeps each family's totals and top offenders (FamilyRow).
//
// # Waiters and deadlocks
//
// A lock's waiters are read from the queues that hold them, beside its
// hash in the same pipeline: store's hand-off queue (each waiter's token,
// the holder field it takes when granted, its arrival and its entry's
// deadline; waiters.go) and Redisson's fair queue. store's spin, token and
// read-write locks wait by polling, and each waiting call keeps an entry in
// the lock's poll-waiter hash while it polls (pollwaiters.go). A Redisson
// RLock or read-write lock keeps no queue: its waiters are only the
// subscribers of its channel, counted for held locks a few a tick
// (subscribers.go).
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
