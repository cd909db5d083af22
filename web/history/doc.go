// Package history keeps the console's past of every busy lock and limiter
// in Redis, under the console's own keys, so that a console restart keeps it
// and every replica shows the same past.
//
// The console runs it through a Recorder (recorder.go), one of live's
// observers, which turns each snapshot into a Sample, and one of admin's
// listeners, which marks a force-unlocked hold; requests read it through a
// Cache (cache.go), once per flush whatever the number of viewers.
//
// The Recorder hands each sample to Observe: per limiter the
// attempts counted since the previous sample, per lock its holders and the
// acquisitions and waits its scripts recorded since then. One
// goroutine owns all state; it rolls limiter counts into 10 s and 1 min
// steps, follows each lock's holds (who, from, to, and how the hold ended)
// and sums its waits per minute, and once per 10 s step the replica that holds the writer lock
// (WriterLock, a store.Lock with a lease kept alive by the
// watchdog) writes what changed in one pipeline. The other replicas follow
// the same samples without writing, so whichever takes over the lock has
// the recent steps the last writer may not have flushed.
//
// Only the Options.Top busiest limiters (by attempts) and locks (by hold
// changes, waiters and contended acquisitions), each ranked by an
// hour-decayed score, are kept; an object that leaves the top has its keys
// deleted. The index key keeps each
// kept object's score, so a replica that takes over right after starting
// ranks from the last writer's view rather than its first seconds.
//
// A hold ends released, handed off (another holder appeared in the same or
// the next sample), expired (the lock vanished once its last seen lease had
// run out) or force-unlocked (Ended, from whichever replica ran the
// force-unlock: the mark is kept beside the running hold in Redis).
// Invalid read parameters are CodeInvalid *inspect.Errors naming them.
//
// Reads (Limiter, Lock) cost one round trip and end at the newest sample
// the writer flushed, so every replica answers the same JSON; Stats is
// for /status and reads no Redis.
//
// Keys (keys.go, the console's own, as web/auth's are), all of one
// object in its hash slot:
//
//	lw:{<tag>}:h10s:<name>    limiter, 10 s ring (string of 16-byte records)
//	lw:{<tag>}:h1m:<name>     limiter, 1 min ring (same records)
//	lw:{<tag>}:hholds:<name>  lock, ended holds (list, newest first)
//	lw:{<tag>}:hopen:<name>   lock, running holds (hash)
//	lw:{<tag>}:hwait:<name>   lock, per-minute waits (string of 17-byte records)
//	lw:{lw-history}:meta      newest flushed sample time, writer id
//	lw:{lw-history}:index     kept objects and their scores
//	lw:{lw-history}:writer    the writer lock
//
// Rings are written at fixed offsets (SETRANGE) with absolute values, so a
// re-sent or repeated write changes nothing, and each ring is allocated at
// its full length on first write so Redis never grows it.
package history
