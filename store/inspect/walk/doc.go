// Package walk is how the console finds the locks and limiters in Redis
// and decides which to read each tick; package inspect reads and
// classifies them (the model). It needs few of the Inspector's methods
// (Source), and carries another room's reads in its tick (Carried: a
// family page, package family).
//
// A Walker rides in every tick's sample pipeline (inspect.SampleWith, with
// the walk's reads as an inspect.Rider), so a tick stays one round trip
// per node, and finds new objects three ways:
//
//   - announced: store clients list the names they use in the registry's
//     names zset (token locks and counters with their kind); each tick
//     reads what was added since the last (ZRANGE BYSCORE; registry.go),
//     and a tick that finds new names reads and classifies them at once,
//     in a second pipeline of that tick only, so a store lock shows within
//     one tick;
//   - notified: keyspace notifications (KeyEvents, notify.go) name keys
//     that were written; Suggest hands them over, the next tick types them
//     (TYPE), the one after sizes the hashes with HLEN (a large application
//     hash is never transferred) and reads the sorted sets and the strings
//     a pattern or framework convention claims, and the next reads the
//     small hashes;
//   - reconciled: one SCAN page per tick walks the keyspace, every type
//     (one node, no string patterns; step.go), paced so a pass takes about
//     the pass duration and its measured cost stays within the budget
//     (pace.go). A key listed by tick n is classified by tick n+3.
//
// Where the walk cannot SCAN in the tick (a Cluster, string patterns), full
// passes (Walker.Discover, discover.go) run at start and then as often as
// the budget pays for. A hash a pass found to be no object is not examined
// again for a few passes (rejects.go).
//
// Known objects are read on a cadence (cadence.go): every tick while they
// change, every few seconds once idle (an idle hash lock lightly: its
// hash, its lease and one EXISTS over its side keys), at once when a
// notification, a release message or an ending lease says so, or, for an
// idle limiter, when an HLEN of its stats ring finds a new bucket.
// subscribers.go picks the held Redisson locks whose waiters (their
// channel's subscribers) a tick counts. Walker.Status reports the mode,
// the last pass, what each source found and the measured share;
// BENCHMARKS.md has the figures.
package walk
