package bench

// Prose the report carries with the figures.

const handoffDesign = `### How lockwarden waits: an ordered hand-off

Waiters queue in Redis, in the lock's hash slot: a ZSET ` + "`lw:{tag}:queue:<name>`" + ` of waiter tokens scored by arrival
(Redis TIME), and a HASH ` + "`lw:{tag}:waiters:<name>`" + ` token → deadline, lease, holder. A waiter queues itself in the
attempt that fails, after its client confirmed the subscription to the lock's channels. The release of the last
level pops the first live entry, writes that waiter's holder field (Redisson's layout, count 1) with a short lease,
and publishes its token on ` + "`lw:{tag}:handoff:<name>`" + `, then ` + "`0`" + ` on ` + "`redisson_lock__channel:{name}`" + ` as
Redisson does. The waiter already owns the lock when the message arrives, so it returns without another round trip,
and nobody can barge in between release and acquire. Only the named waiter wakes; the ` + "`0`" + ` behind the hand-off is
skipped by lockwarden clients, so it costs no retries. Whoever finds the lock free while a live waiter is queued (a
Redisson holder released it, its lease ran out, it was force-unlocked) hands it to that waiter instead of taking it.
Entries expire after 3 s unless the waiter refreshes them (at least every second), so a dead waiter is skipped, and a
hand-off lease is at most 3 s until the new holder's watchdog renews it. Redisson clients on the same lock stay
correct (they see the hash held and a ` + "`0`" + ` on every release) but do not queue.
`

const consoleNotes = `### What cases 5–8 show, the gaps, and the next ideas

**5, sampler.** A tick is one pipeline (met: one round trip per node per tick when only sampling). For each token
bucket the pipeline holds HGETALL of the bucket, HGETALL of its stats ring, and an EVAL of the Redisson window
script (store/enrich.go ` + "`queueWindowState`" + `), which Sample queues for every limiter because it does not yet know the
limiter's kind; for a token bucket the script finds nothing, but it is a full EVAL with the script's source on every
tick (EVAL, not EVALSHA) and runs a few commands inside. That is half of what Redis executes per tick and most of
its CPU: the hand-built row, the same reads without it, costs a fifth or less. Next idea (store/sample.go): queue the
window read only for names Discover classified as Redisson limiters, by EVALSHA. The default console also
rediscovers every second: one SCAN call per 1,000 keys of the whole keyspace (MATCH filters after the walk), then
HLEN and HGETALL pipelines for the candidates, which are the extra round trips per tick in the "default" rows. Next
idea: rediscover less often or incrementally (keyspace notifications for new keys, a full pass every 10–30 s), since
the sampler already sees vanished objects itself. At 10,000 limiters one pipeline takes 150–350 ms and the stats
frame is over 2 MB, so the sampler cannot keep 5 ticks/s: the EVAL fix and a smaller frame are both needed there.

**6, fan-out.** The sampler marshals one frame per tick and the hub hands the same bytes to every viewer, so Redis
load does not move with 1,000 viewers (met), and the console's CPU stays low. The delay is the time to push one
frame through 1,000 sockets: each viewer's writer goroutine copies the frame and makes its own write syscall, so a
tick's frames leave over a burst of tens of milliseconds on the 2 CPUs this machine shares between the console, the
viewers' process and Redis; p50 is about half the burst and p99 its end plus scheduling stalls, which puts p99 at or
over the 50 ms target on this machine (runs so far: 51–96 ms). The cost grows with viewers × frame bytes: at 1,000
limiters the frame is ~220 KB (about 1 GB/s for 1,000 viewers), p99 reaches hundreds of milliseconds, and in some
runs the viewers fall seconds behind. Next idea (web/sampler.go, web/hub.go): send the static parts of a frame
(kinds, limiter_info, first_seen) only when they change and the counts as deltas, so a steady-state frame is a few
KB whatever the number of objects; then write through gorilla's PreparedMessage so the framing is built once per
frame, not once per viewer.

**7, events.** An unlock message costs the console one pub/sub read, one small JSON frame and one hub broadcast;
p99 stays well under the target at 1,000 events/s with no event lost; the max is a scheduling stall on the shared
CPUs.

**8, discovery.** SCAN with TYPE hash skips the 900,000 strings inside Redis; each batch of hashes costs one HLEN
pipeline and, for the small ones, one HGETALL+PTTL pipeline, and Redis answers other clients between the calls, so
their p99 stays under 2 ms while the pass uses most of a Redis core for about two seconds. Both targets are met.
Since the default console repeats this pass every second, a keyspace this large would keep Redis ~70 % busy: the
same next idea as in case 5 (rediscover less often or incrementally) applies, or a narrower MATCH pattern.
`

const seedLossNote = `Why seed 001's script loses permits, and when: its refill adds floor(elapsed / interval) permits and then
sets last_mill_second to now, throwing away the rest of the interval (elapsed mod 2 ms here, with the client's
millisecond clock). In phase, each 30 ms burst starts 30 ms after the previous one, a whole number of 2 ms
intervals, so little is thrown away. In the seed's own loop the workers drift apart and requests arrive about
1.5 ms apart: a refill then often comes 3 ms after the last one and keeps only 2 of them. How much is lost depends
on how the request spacing falls against the interval, so the shortfall differs from run to run and machine to
machine; the issue's ~12 % (the seed's printed windows go down to 417) is the same effect under the seed's own
timing. lockwarden advances last_mill_second by whole intervals only, so neither pattern loses anything.`

const speedGaps = `## Why cases 1–3 miss their targets, and the next idea

Inside Redis, a lock + unlock pair of a free lock now runs 9 commands (TIME, one EXISTS of the lock and its queue,
HSET, PEXPIRE, the stats HINCRBY; HGET, DEL, an empty ZRANGE of the queue, PUBLISH of Redisson's ` + "`0`" + `), down from
15–17, and a rejected limiter decision runs 3 (TIME, HMGET, HINCRBY) and no longer writes the bucket. The stats cost
one HINCRBY per attempt (field ` + "`<outcome><bucket>`" + `; expiry and clean-up only on the first count of a field). On the
Go side a hold no longer starts a goroutine and a timer (one watchdog heap per Client), and the hot calls send a
prepared EVALSHA argument list. bsm/redislock runs 3 commands per pair (SET NX PX; GET, DEL) and redis_rate 2 per
rejection (TIME, GET). A separate measurement around case 1 at C=16 (INFO used_cpu and getrusage) put Redis at about
27 µs per lockwarden pair against 19 µs per redislock pair, and the Go side at about 36 µs against 31 µs, mostly the
same two syscalls per round trip. On 2 logical CPUs shared by Redis and the benchmark, what the ratio measures is
the work the peers skip: the re-entrancy check, the hand-off queue check, the unlock message and the stats count.
With one round trip per call and one command per connection at a time, that work has a price the peers do not
pay, and the targets stay out of reach.

Next idea: batch concurrent calls into pipelines (go-redis v9.23's AutoPipeline, or a small batcher in store), so
that at C ≥ 16 Redis and the client pay one read and one write per batch instead of per call, which is where most of
the CPU goes. Before adopting it: go-redis marks it experimental, a queued command no longer honours its context,
and a batch is retried whole after a dropped connection, so a re-entrant acquire could run twice; the acquire script
would first need a per-call nonce to be idempotent.
`
