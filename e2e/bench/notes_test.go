package bench

// Prose the report carries with the figures.

const handoffDesign = `### How lockwarden waits: an ordered hand-off

Waiters queue in Redis, in the lock's hash slot: a ZSET ` + "`lw:{tag}:queue:<name>`" + ` of waiter tokens scored by arrival
(Redis TIME), and a HASH ` + "`lw:{tag}:waiters:<name>`" + ` token → deadline, lease, holder. A waiter queues itself in the
attempt that fails, after its client confirmed the subscription to the lock's channels. The release of the last
level pops the first live entry, writes that waiter's holder field (Redisson's layout, count 1) with the lease its
entry carries, and publishes its token (and the next waiter's) on ` + "`lw:{tag}:handoff:<name>`" + `, then ` + "`0`" + ` on ` + "`redisson_lock__channel:{name}`" + ` as
Redisson does. The waiter already owns the lock when the message arrives, so it returns without another round trip,
and nobody can barge in between release and acquire. Only the named waiter wakes; the ` + "`0`" + ` behind the hand-off is
skipped by lockwarden clients, so it costs no retries. Whoever finds the lock free while a live waiter is queued (a
Redisson holder released it, its lease ran out, it was force-unlocked) hands it to that waiter instead of taking it.
Entries expire after 3 s unless the waiter refreshes them (at least every second), so a dead waiter is skipped. When
the waiter's grants need no replica acknowledgement its entry carries its own full lease, so the message is the whole
grant (a waiter that died after its last refresh blocks the lock up to one lease, as a dead holder does); when
replicas must acknowledge, the entry carries a claim of at most 3 s that the waiter confirms, with its WAIT, before
Lock returns. A lost message costs the waiter one retry interval (at most 1 s): its next attempt finds the hand-off
mark naming its token. Redisson clients on the same lock stay
correct (they see the hash held and a ` + "`0`" + ` on every release) but do not queue.

When the waiter first in the queue belongs to the releasing Client (store/lock_pass.go), Unlock lets it go on at
once, in process, and the release script hands it the lock in Redis in the same round trip: the new holder does not
wait for Redis. The hand-off's message (and the pass's reply) names the token then first in the queue, so each holder
knows whether its own release can be a pass; only that token is ever passed to. To make passes the common case, a
Client's tokens carry its group (` + "`<group>.<random>`" + `), and a token queued less than 3 ms after another of its group
(among the queue's 32 newest entries) is scored right behind that one (luascripts/lock_acquire.lua's ` + "`place`" + `): a
Client's waiters stand together in the queue, and nobody is passed by a waiter that came 3 ms or more after it. A
pass records the waiter's wait as its Client measured it (its score can be up to 3 ms early). The new holder runs on the releaser's hold until Redis records the pass, so a pass is only made while that
hold's lease has at least half of it left, from a handle whose count is known (no unanswered call) and whose holder
field no other handle shares; the new holder's next call waits for the pass's reply. A pass whose hold turned out to
be gone (force-unlocked, lost by Redis) changes nothing in Redis, and both holders hear ErrNotHeld. Levels the
releaser's field holds beyond the one its handle counts (a re-entry Redis ran twice after a lost reply) go with the
pass.

Waiters of a Client that arrive within 2.5 ms of its queued waiter's attempt do not queue at all
(store/lock_follow.go): they follow that waiter in process, in arrival order, and each holder passes to the next
of them before anyone behind in the Redis queue, where the placement above would have put their entries anyway.
A follower still waiting after 1 s queues itself, right behind the waiter it followed while that one is queued; so
does one whose leader gave up, and nobody follows when replicas must acknowledge a grant.
`

const consoleNotes = `### What cases 5–8 show, the gaps, and the next ideas

**5, sampler.** A tick is one pipeline per node: the sample, one SCAN page of the paced walk, the registry's new
names and, once a second, the client records all travel together, and on one node the tick's answer is the health
check (no PING of its own). Redisson windows are read by EVALSHA and only for names not already known as token
buckets. Idle objects (no outcome counted lately) are read every 5 s rather than every tick, every 10 s once
unchanged for about a minute, and an idle lock with no side keys (a plain Redisson lock) as its hash, its lease and
one EXISTS instead of eight commands: that is what keeps 10,000 objects affordable. The negative CPU figures are noise: the row subtracts a traffic-only window measured
just before, on a shared 2-CPU machine.

**6, fan-out.** The sampler builds each frame once and the hub hands the same prepared websocket message to every
viewer, so Redis load does not move with 1,000 viewers. After a viewer's first frame, frames carry only what changed
(counts that moved, who holds a lock when that changes, the stale set, the alerts when they change). The tick no
longer encodes the rarely-changing part to compare it: it is compared field by field and encoded only when a viewer
needs a full frame. What is left is pushing one frame through 1,000 sockets on 2 CPUs shared with the viewers'
process and Redis.

**7, events.** An unlock message costs the console one pub/sub read, one small JSON frame and one hub broadcast;
the max is a scheduling stall on the shared CPUs.

**8, discovery.** One full pass (what the console runs at start) uses most of a Redis core for a few seconds while
other clients' p99 stays low; it also notes the hashes that are no object. After it the console walks: each tick's
pipeline carries one SCAN page sized from the keys and time left in the pass and from what a key costs Redis (its
main thread's CPU, measured), within the console's budget (4.5 % of a core by default) less what its sampling
costs (priced from the commands it sends). Hashes found to be no object are not sized and read again for 4–7
passes, so the walk is SCAN alone. Announced names (store clients) are read on the tick that hears of them,
keyspace notifications within a second. What is left is SCAN itself: its TYPE filter looks every key up on Redis
7.0, and on this machine a key costs about 2 µs (a lookup far out of cache), so a 60 s pass over 1M keys is 3–4 %
of a core and the 1M targets hold with little margin. At 10M keys the same budget makes a pass about ten minutes;
such a server wants keyspace notifications (or store's announcements) for new objects.
`

const seedLossNote = `Why seed 001's script loses permits, and when: its refill adds floor(elapsed / interval) permits and then
sets last_mill_second to now, throwing away the rest of the interval (elapsed mod 2 ms here, with the client's
millisecond clock). In phase, each 30 ms burst starts 30 ms after the previous one, a whole number of 2 ms
intervals, so little is thrown away. In the seed's own loop the workers drift apart and requests arrive about
1.5 ms apart: a refill then often comes 3 ms after the last one and keeps only 2 of them. How much is lost depends
on how the request spacing falls against the interval, so the shortfall differs from run to run and machine to
machine; the issue's ~12 % (the seed's printed windows go down to 417) is the same effect under the seed's own
timing. lockwarden advances last_mill_second by whole intervals only, so neither pattern loses anything.`

const speedGaps = `## Cases 1–3: where the time goes, and batching

Inside Redis, a lock + unlock pair of a free lock runs 7 commands (TIME, one EXISTS of the lock and its queue,
one HSET of the holder field and its hold record, which is a field of the lock's own hash, PEXPIRE, the stats
HINCRBY; one HDEL of the holder field, its hold record and the queued mark, whose count says the release is done,
PUBLISH of Redisson's ` + "`0`" + `), and a
rejected limiter decision runs 3 (TIME, HMGET, HINCRBY). bsm/redislock runs 3 commands per pair and redis_rate 2 per
rejection: the difference is the work the peers skip (re-entrancy, the hand-off queue check, the unlock message,
the stats count). Before the hold record moved into the lock's hash a pair ran 11 (the record's own HSET and
PEXPIRE, an HGET before the DEL, an empty ZPOPMIN). With one round trip per call that work cannot be won back, so store batches: calls that arrive
while others are on the wire join one pipeline (store/batch.go), and Redis and the client pay one read and one
write per batch instead of per call. A call alone goes out alone, so C=1 does not gain (and stays at the
peers' level); at C=64 batching is what puts lockwarden ahead, at C=16 not yet (see below). Batched commands are marked not retryable: go-redis
re-sends a whole pipeline after a network error, which would run calls that had already been answered a second
time; instead each call in a lost batch fails with the network error, as a single call whose retries ran out.
` + "`Options.NoBatching`" + ` turns it off. Case 3 runs one store.Client per application instance, as an application
would (one Client per key would never batch). Case 2 does not gain from batching: its cost is the hand-off itself
(release, the pub/sub message, the waiter waking) while a 200 µs busy critical section holds one of the 2 CPUs.
Case 2, weighed: a contended acquisition runs the queueing attempt (10 commands with its EVALSHA: a waiter reads
PTTL first and skips the EXISTS of a free lock; the first queueing also reads the newest entries to stand behind its
Client's, and sets the lock's queued mark) and the release that hands off or passes (13 with its EVALSHA: the grant
and its wait go into the stats bucket with one HMGET and one HSET, the new holder's field, its hold record with the
mark naming the token handed the lock and the queued mark ride in one HSET of the lock, and one ZRANGE names the
next waiter), 23–25 in all. A waiter that arrives less than
2.5 ms after a queued waiter of its Client was sent writes no entry: it follows that waiter in process
(store/lock_follow.go), where lock_acquire.lua's placement would have put its entry anyway, and its acquisition is
the pass alone (11 with its EVALSHA). In case 2 most waiters follow, so an acquisition averages about 15; the
waiter's confirmation (3 more, and a round trip between two holders) is sent only when replicas must acknowledge the
grant, and then nobody follows.
Case 2's instances are processes of their own. They used to be two store.Clients in one process, and there a
hand-off from one instance to the other waited on the Go scheduler the two shared: timestamps in the releasing and
receiving instances showed the releaser's reply back at a median 0.03–0.17 ms and the hand-off's message read by the
other instance 0.07–0.2 ms after it (0.17–0.28 ms from the release, at GOMAXPROCS 1, 2 and 4 alike), then 7 µs to
the waiter's return. No two
application instances share a scheduler, so the case now runs each in its own process, every peer alike. The levers,
measured on this machine in runs of case 2 alone, lockwarden and the peers in turn: fewer commands in the hand-off
moved nothing (the release without its five announcement and wait-stats commands: 0.92× redislock, within the runs'
spread, although Redis then ran 4 µs less per release); the in-process pass is what moves case 2. A hand-off between
two goroutines of one Client takes a median 0.04–0.07 ms from release to acquisition, one between instances
0.2–0.3 ms. In plain arrival order 52–61 % of acquisitions were passes; with a Client's waiters standing together
within 1 ms among the 8 newest entries 70–78 %, capped there because the other instance's 8 waiters hid the group's
newest entry; within 3 ms among the 32 newest, 87 %. In alternating runs of case 2 alone with instances as processes
(3 pairs of 3 rounds), that last step moved lockwarden from 1.02–1.15× redislock and 1.03–1.08× redsync to
1.13–1.22× and 1.16–1.18×, wait p99 6–8 ms, in every pair. In one process the same step moved nothing: the
cross-instance hand-offs it saves were not what that harness was slowed by.
Measured and not kept: publishing the hand-off only to the recipient Client's channel and dropping the ` + "`0`" + ` behind
it (Redis CPU per acquisition 78 → 67 µs, acquisitions within the runs' spread; the console's unlock feed would lose
hand-offs). What 16 took: every attempt counts its outcome and a granted waiter its wait in the same
script, scripts record when a holder acquired, waiters are read from the queue that holds them, and Redisson's
layout and unlock message stay as they are (DESIGN.md). Counted from those alone, a contended acquisition runs about
18 commands: the queueing attempt's EVALSHA, TIME, a read of the lock, the entry with its expiry and the "r" (6),
and the hand-off's EVALSHA, TIME, the holder's check and release, the queue's pop, the lock's HSET (with the hold
record) and PEXPIRE, the ` + "`0`" + ` and the hand-off message, the grant's count and its wait (12). Below 18 a
Client's waiters must stop writing one entry each, and followers do that: a follower is not in the queue for its
first second (then it queues itself, so the console and deadlock detection see waits that last), and it makes no
attempt of its own, so it adds no "r".
Where case 1's time goes (the CPU table under case 1, and runs of case 1 alone with the batcher's own timings): at
C=16 lockwarden used to leave about 0.6 of the 2 CPUs idle against redislock's 0.3, with Redis near 0.7 of a core:
it waited on round trips, not on CPU. Its calls went out in batches of about 5, two on the wire at a time; a
batch's round trip took 120–150 µs while Redis's own work for it is about 50 µs. The cause was the order in which
a batch is answered: the flusher wakes the batch's callers, and on a busy machine they run only after it, so it
found few calls queued, sent those, or gave its slot back and let the next call go out alone, while the callers it
had just woken (an Unlock right after a Lock) queued behind. The flusher now yields once after answering a batch
when fewer calls are queued than it answered (store/batch.go), and the woken callers join the next batch. In runs
of case 1 alone (three runs of 10 rounds, both ways in every round) that moved C=16 from 0.85× to 1.00×
redislock, Redis's CPU per pair from 18.2 to 16.2 µs, and case 3 at C=16 by 19–20 %; C=64 stayed within its
spread. What did not move it: 3 to 8 calls or batches on the wire at once (store/batch.go's maxInFlight; more in
flight makes batches smaller and Redis's cost per pair rises, 18 → 22 µs at 8), a yield only when the queue is
empty, or GOMAXPROCS 4. Without batching the ratio is 0.65–0.71. What is left inside Redis: the scripts are about 7 µs
of a pair against redislock's 3.5–4 µs (INFO commandstats over store's calls replayed at C=1, 9 µs before the hold
record moved into the lock's hash). Each command called from a script costs Redis about 0.25–0.5 µs besides its own
work, TIME 0.7 µs (its reply becomes a Lua table of two strings); the stats count is about 0.9 µs (its HINCRBY
scans a listpack of up to 64 fields), the unlock message 0.3–0.5 µs, a script's argument about 55 ns, and a local
function Lua reaches about 25 ns, so the common paths come before the helpers only the others use and the calls
carry no argument the script can build (lib/channels.lua). At C=1 (one round trip per call, Redis's part in series)
that leaves lockwarden about 3.5 µs a pair behind redislock inside Redis, with store's own code under 1 µs a pair
beside go-redis's (runs of the same scripts through go-redis's own EvalSha); at C=64 batches are large and Redis's
cost per pair falls below redislock's.
`
