// Package luascripts holds the Lua that applications and the console run
// against Redis. Each operation is one .lua file, embedded, so the Go code
// and any other client (redis-cli --eval, Redisson, ...) run the very same
// text.
//
// # Sources and the scripts generated from them
//
// The scripts are written in src/; a helper several scripts share is
// written once in lib/ and pulled in by a line
//
//	--#include lib/record.lua
//
// `go generate ./luascripts` (internal/gen) writes each src/<name>.lua to
// <name>.lua with its includes expanded, a helper at most once per script
// (a helper that needs another includes it too). The generated files are
// committed and stand alone; `make lint` and the gen package's test fail
// when they differ from what the generator writes. A helper reads locals
// the including script sets before the include line: stats and now for
// record, waited for granted, sharded for announce, and so on, as each
// lib file's comment says.
//
// A script's header is a line or two of intent and its contract: KEYS[n]
// -> key (TYPE), ARGV[n], then Returns. The tests check that every KEYS
// and ARGV slot the code reads is described, and that every Go name
// (wire.StatsKey) and file (store/lock_wait.go) a comment names exists.
// Why a script does what it does is below.
//
// # What every script keeps to
//
//   - Keys travel only in KEYS, all in one hash slot; channels travel in
//     ARGV, since they are not keys (Cluster would reject them as
//     CROSSSLOT), or the lock scripts build them from their keys
//     (lib/channels.lua, checked against wire by store's
//     TestLockScriptChannelsAreWires), so the hot calls carry less.
//   - Time is Redis TIME, the one clock every client shares.
//   - A number reaches redis.call as a string formatted with %d (or %.17g
//     for fractions): Redis 7.0 formats a Lua number argument with %.17g,
//     and Lua's concatenation uses %.14g, each about 0.2 µs, a tenth of a
//     command (TestNoNumberLiteralReachesRedisCall).
//   - A key of another type is found by the WRONGTYPE error of the first
//     command that reads it (redis.pcall), not by a TYPE on every call.
//   - Every attempt of an application's acquire counts its outcome in the
//     object's stats hash (wire.StatsKey, layout above wire.BucketMS) in
//     the same script: lib/record.lua, and lib/record_wait.lua for a grant
//     that waited.
//   - A release publishes with SPUBLISH as well as PUBLISH when the caller
//     says so (lib/announce.lua): on a Cluster of Redis >= 7 Redisson >=
//     3.22 waits with SSUBSCRIBE, and the channel is in the lock's slot.
//
// # Reentrant lock (lock_acquire, lock_release, lock_renew, lock_force_release)
//
// Redisson's RLock layout. Waiting is an ordered hand-off (store/lock_wait.go
// has the whole design): a waiter is queued by arrival, a store Client's
// waiters side by side (lock_acquire's place); whoever finds the lock free
// while an earlier waiter is queued gives it to that waiter instead of
// taking it, and lock_release does the same, so the lock goes to the
// longest waiter in one step and only that waiter is woken.
//
// lock_release publishes "0" on the unlock channel for every last level,
// as Redisson does, so Redisson waiters and the console see every release;
// a hand-off first publishes "<token> <next>" on the hand-off channel,
// which wakes that one waiter and tells lockwarden clients that the "0"
// after it is not a free lock. A hand-off sets the lease the waiter's entry
// carries: its own full lease when its client needs no replica
// acknowledgement, so the waiter returns on the message with nothing more
// to send (a waiter that died after its last refresh then blocks the lock
// up to one lease, as a dead holder does), else a short claim it confirms
// with lock_renew. A waiter whose message was lost takes its hold on its
// next timed attempt, which finds the "=" mark naming its token.
//
// The holder's hold record and the queued mark are fields of the lock's
// own hash (wire.HoldField): Redisson's scripts read only their holder
// field, and the lock's PEXPIRE, DEL and expiry cover them, so a hold costs
// no key of its own. While lockwarden holds the lock the hash is exactly
// the holder field, its hold record and, while waiters queue, the mark;
// so a handle alone on its holder field releases its last level with one
// HDEL of the three, whose count says whether the holder was there (2 or
// 3) and whether waiters queue (3). That HDEL also takes the mark of a
// hold that is not the caller's (1), which goes back.
//
// Costs, in commands inside Redis: a free lock nobody waits for is found
// with one EXISTS of the lock and its queue, and taken with TIME, EXISTS,
// one HSET of the holder field and its hold record, PEXPIRE and the stats
// HINCRBY. The common release, the last level with nobody queued, is that
// HDEL and PUBLISH: 7 a pair. A release that reads
// the count first (a holder field several handles share) is HMGET, DEL and
// PUBLISH. A waiter's attempt on a held lock reads PTTL and HMGET, queues
// with ZADD, HSET and two PEXPIRE, and counts its "r": 8 with TIME, plus a
// ZRANGE of the newest entries and the queued mark's HSET when it queues
// for the first time. A hand-off is the HDEL, ZPOPMIN, TIME, HGET and HDEL
// of the entry, the ZRANGE that names the next waiter, the lock's HSET
// (holder, hold record with the hand-off mark, queued mark when others
// wait) and PEXPIRE, two PUBLISH and the stats' HMGET and HSET: 12, and
// the stats hash's PEXPIRE and clean-up once per bucket. A local pass
// (store/lock_pass.go) is HGET, TIME, ZREM and HDEL of the entry, DEL,
// then as a hand-off from the ZRANGE on: 12, and 10 to a follower, which
// has no entry.
//
// lock_force_release acts only if the holder the admin saw still has the
// lock, so a lock that changed hands since is left alone.
//
// A release or renewal that finds its holder gone came after the hold
// ended: the holder worked past its lease (a pause, a renewal that did
// not get through) and someone else may have been in with it. The
// refusing branch, never the common path, records it (lib/late.lua, layout
// at wire.LateFieldPrefix): TIME, an HGETALL of the lock for the holder it
// has now, the stats field, the stats hash's PEXPIRE and a PUBLISH on the
// lock's late channel, where the console hears it even for a lock now
// free. lock_renew records only when the stats key is passed (the
// watchdog's renewals and Refresh; not a hand-off's confirmation, whose
// claim may simply have run out), as fairlock_unlock, tokenlock_release
// and tokenlock_refresh do: the console's force-unlock runs
// tokenlock_release without it.
//
// # Fair lock (fairlock_*)
//
// Redisson's RFairLock: the RLock hash, the list
// wire.FairLockQueueKey of waiter ids in arrival order and the zset
// wire.FairLockTimeoutKey of each waiter's deadline. Only the head of the
// queue may take a free lock; a head whose deadline has passed is taken
// for dead and dropped, so a crashed waiter delays the others by at most
// its deadline. A release wakes only the head, on its own channel
// (wire.UnlockChannel, ':' and its id), after dropping dead heads, so the
// message reaches a waiter that is still there; fairlock_unlock wakes it
// even when the lock is already gone (its lease ran out), as Redisson
// does, since nobody else will.
//
// Deadlines follow Redisson's arithmetic (3.13.3 and later, thread wait
// time 300 s by default): a new waiter's deadline is the last waiter's (or
// now + the holder's remaining lease) plus the wait time, and the head's
// acquisition, or any waiter's removal (fairlock_withdraw, the console's
// fairlock_drop_client), moves every later deadline one wait time earlier,
// as a Redisson client does, so neither kind of client pushes the other's
// waiters into the past. A queued caller also pushes its own deadline to
// at least now + the holder's remaining lease + the wait time on every
// attempt, so it never goes stale while alive, whatever the holder's
// renewals. fairlock_drop_client removes only the places the admin saw,
// while they are still queued and belong to the client named, and wakes
// the new head when the lock is free: it may take the lock now and nobody
// else would tell it.
//
// # Fenced lock (fencedlock_acquire)
//
// Redisson's RFencedLock: the RLock hash (released by lock_release) plus
// the counter wire.FencingTokenKey, INCRemented by every successful
// acquire, re-entries included, as Redisson does, and never expired or
// deleted: the guarded resource rejects any token below the last one it
// saw, so a holder that lost the lock (lease ran out, force-unlock) cannot
// write after the next one did.
//
// A missing token key (first use, or lost when Redis restarted without
// persistence, or failed over to a replica that had not got it) is first
// SET to Redis TIME in microseconds, then INCRemented. Tokens then keep
// growing across such a loss: the tokens handed out before it were at most
// the older seed plus one per acquire since, which stays below the new
// seed as long as the lock averaged fewer than a million acquires a second
// and the server clock did not step back. The first token of a new lock is
// therefore about 1.8e15, not 1; it fits a signed 64-bit integer and a
// Lua/JSON double (below 2^53) for centuries. Redisson's clients only INCR
// this key, so they continue above a seeded value; a Redisson client that
// is the first to acquire after the key was lost still starts again from 1
// (it does not seed), so mixed deployments that need fencing across
// restarts must let a lockwarden client take the lock first, or enable
// persistence.
//
// # Read-write lock (rwlock_*)
//
// Redisson's RReadWriteLock, so Java clients and the console share the
// lock: hash <name> with "mode" = read|write and one field per holder,
// "<uuid>:<owner>" for read levels and "<uuid>:<owner>:write" for write
// levels, each holding its reentry count. Every read level n also has a
// string key (wire.RWReadLevelKey) with its own lease, so a reader that
// died stops counting once its level keys run out.
//
// Readers share the lock; a writer excludes other holders, even its own
// owner's read levels (as in Redisson, where a reader asking for the write
// lock waits until its read levels are gone), but a writer's owner may
// take read levels and keeps them after its write levels are gone, which
// turns the lock back into a read lock (as Redisson's write unlock does,
// publishing nothing). The key of a new read level must travel in KEYS, so
// the caller names the level it expects to create: when Redis disagrees
// (another handle of the same owner took or released a level meanwhile)
// nothing changes and the real count comes back, for the caller to retry
// with the right key.
//
// Redisson's read unlock re-computes the lock's expiry from every other
// reader's level keys, building their names inside the script. Keys travel
// only in KEYS here, so the lock keeps its expiry while others hold it:
// each remaining holder's own renewal keeps it alive, and a reader that
// died holds it at most one lease longer. Every script raises the lock's
// expiry and never lowers it: other readers may hold longer leases. The
// hold times live beside the hash (wire.HeldKey), not in it: Redisson's
// read unlock reads every field of the hash (HLEN, HKEYS and each value)
// to find the lease the other readers still need, so this hash keeps
// Redisson's fields alone.
//
// # Token lock and deadline lock (tokenlock_*, deadlinelock_force_release)
//
// The SET NX PX layout of redsync and bsm/redislock: the value is the
// holder's random token, and refresh and release compare it first, so a
// lock that expired and was taken by someone else is never extended or
// broken. Other clients of this layout listen to nothing: they poll and
// find the key gone on their next attempt; lockwarden's waiters are woken
// on wire.TokenLockChannel.
//
// A deadline lock is SETNX of a deadline in epoch ms, taken over with
// GETSET once it has passed. The value the admin saw identifies the
// holder: a client that took the lock over meanwhile wrote another value,
// and the lock is left alone. Such locks have no channel, so nothing is
// published; waiters find the key gone on their next SETNX.
//
// # Token bucket (tokenbucket_*)
//
// The "ratelimit:<app>" hash layout (last_mill_second, stored_permits,
// max_permits, interval, app; codes 1, 0, -1, -2, ...). Unlike the
// layout's one-script clients, which pass their own clock, the clock is
// Redis TIME (one clock for every client, one round trip), and a refill
// advances last_mill_second by whole intervals only, so the part of an
// interval already elapsed is not thrown away. A full bucket does not bank
// time: once it reaches max_permits, last_mill_second moves to now.
//
// An acquire costs TIME, HMGET, the stats HINCRBY, and HSET only when
// permits are taken. A rejection writes nothing to the bucket: it means
// stored + k < want <= max_permits after a refill of k, so the cap did not
// apply, and the next call derives the very same refill from the
// unchanged fields.
//
// tokenbucket_modify changes only the configuration, as the layout's other
// clients do, but first settles the refill up to now at the old rate and
// capacity: time that has already passed was promised at the old rate, and
// a new rate applies from now on. A corrupt field that cannot be settled
// restarts (last_mill_second = now, stored_permits = 0), so a modify
// repairs a bucket.
//
// # Redisson rate limiter (redisson_limiter_*)
//
// Redisson's RRateLimiter: config hash (rate, interval, type, and
// keepAliveTime since 3.35), value key and, since 3.13.3, a sliding window
// whose grants are zset members scored with their time, packed as the
// emulated version packs them (lib/permits_of.lua), so Redisson and
// lockwarden clients read each other's grants. Time is Redis TIME, while
// Redisson passes its own clock as the grant score, so mixing the two on
// one limiter is only as good as the clocks agree.
//
// redisson_limiter_set_rate with "keep": in a fixed window the permits
// already taken (old rate - value) stay taken, value = max(0, new rate -
// taken), and the window ends when it would have, or after the new
// interval if that is sooner; in a sliding window grants older than the
// new interval are dropped and value = max(0, new rate - permits granted
// in the new interval). "reset" deletes every state key given, so the next
// acquire opens a full window at the new rate. redisson_limiter_state
// reads a window without moving it: the console must not change a
// limiter's state by looking at it. redisson_limiter_try_set_rate is
// Redisson's trySetRate: every instance of an application may call it at
// start-up, and the first one wins.
//
// # Client registry (client_beat)
//
// The registry is wire.ClientsKey and wire.ClientNamesKey, both under the
// {lw-clients} tag, so a beat touches one slot. The heartbeat is Redis
// TIME, not the client's clock, so the console compares it with its own
// TIME reads. A beat also keeps both keys bounded: it walks the clients
// hash 100 fields at a time (HSCAN from the cursor the previous beat
// returned), deleting records silent for an hour, and drops names not
// announced for ten minutes.
//
// # The console's own scripts (audit_append, auth_*, history_hold_*, counter_reset, hash_read)
//
// The audit stream is kept by age, not length: no burst of newer entries
// trims an entry younger than the retention. auth_fail_record's waits
// apply to the source and to every source together, each up to its
// ceiling, and are forgotten a while after the last failure; auth_secret
// lets whichever replica asks first store the signing secret. The history's
// writer records holds with history_hold_write; a force-unlock marks the
// running hold first with history_hold_mark, and that mark wins over the
// writer's own verdict, whichever replica writes. counter_reset deletes an
// access counter only while it is still a string holding a whole number.
// hash_read is how the console reads one key a request names: the key may
// be any application's hash, so it is sized first and transferred only
// when small enough to be an object, in one script so that nothing grows
// it in between.
//
// # Other libraries' releases (pyredislock_force_release, springlock_force_release, sidekiq_force_release, symfony_force_release, bottleneck_reset, hashlimiter_reset)
//
// The console breaks another library's lock, or resets its limiter, the
// way that library's own release does, so its waiters wake as they would:
// python-redis-lock's signal list gets the one element its release pushes
// (its waiters BLPOP it), Spring's RedisLockRegistry hears the lock's key
// on its channel, sidekiq-unique-jobs' v7/v8 queued list gets its "1", and
// bottleneck's clients the capacity message on "b_<id>". Each checks the
// holder the admin saw first and changes nothing for another one. These
// libraries name keys without a common hash tag (a lock and its signal
// list, a job's hash and the digests zset): on a Cluster they work only
// where the library itself does, with keys its users tagged.
package luascripts
