// Package whatif answers "what would this limiter have done to the demand it
// saw, had its rate been different?" before a rate is edited.
//
// # What it replays
//
// Replay takes a limiter's recorded demand (a Series: per step, the attempts
// the stats scripts counted as acquired, rejected and errors), and feeds
// every attempt, one permit each, through the decision of the limiter's own
// script at the proposed settings:
//
//   - token bucket (luascripts/tokenbucket_acquire.lua): a permit every
//     IntervalMS, refilled in whole intervals only (last_mill_second moves
//     by k intervals, so the elapsed remainder is kept), capped at
//     max_permits; a refill that reaches the cap moves last_mill_second to
//     now, so a full bucket does not bank time;
//   - fixed window (luascripts/counter_hit.lua, store's access counter, and
//     Redisson's RRateLimiter before 3.13.3 in
//     luascripts/redisson_limiter_acquire.lua): the first attempt after the
//     window ended opens a window of IntervalMS at its own time (INCR then
//     PEXPIRE; SET PX), the first Rate attempts in it are admitted, and the
//     window lives while now <= start + IntervalMS, as a Redis key expires
//     only once its expiry time has passed;
//   - sliding window (Redisson's RRateLimiter from 3.13.3, the same script's
//     "sliding" branch): an attempt is admitted when fewer than Rate grants
//     were made in the last IntervalMS, a grant at t returning at
//     t + IntervalMS (ZRANGEBYSCORE 0 now-interval).
//
// Time is whole milliseconds, as the scripts see Redis TIME, and the
// token bucket's arithmetic is the script's float64 arithmetic on absolute
// Unix milliseconds, so the same arrivals give the same decisions.
//
// Errors (counted "e") decided nothing and are not demand.
//
// # Arrival model
//
// The series says how many attempts a step had, not when within the step
// they came. Replay spreads a step's n attempts evenly over it: attempt j of
// a step starting at s of width w arrives at s + floor((2j+1)·w / 2n) ms, the
// middle of its 1/n share. At the start of the series the limiter is idle:
// a token bucket is full, no window is open, no grant is out.
//
// # What it gets wrong
//
//   - Bursts inside a step are smoothed. Real traffic that arrives in
//     clumps meets an empty bucket or a full window more often than evenly
//     spread traffic, so with coarse steps (10 s, 60 s) and a small capacity
//     the replay under-estimates rejections; the finer the step (the 200 ms
//     stats buckets), the closer it is. Bursts that span whole steps are
//     kept.
//   - Retries are counted as demand. A client that retries after a
//     rejection (store's Acquire, Redisson's acquire) makes several
//     attempts for one request: at a higher rate the replay admits retries
//     that would never have been sent, at a lower rate it misses retries
//     that would have been.
//   - The limiter's state when the series starts is unknown (it is taken
//     as idle), and settings edited inside the span are not replayed: every
//     step is replayed at the proposed settings.
//   - Where rejections are not recorded (Limiter.RejectionsHidden:
//     Redisson's own Java clients and hand-written INCR+EXPIRE counters
//     decide in scripts that count nothing), the demand is only what was
//     recorded, mostly the grants; the real demand was higher, so attempts
//     and predicted rejections are lower bounds (Result.LowerBound).
//   - A per-client Redisson limiter gives each client its own window, but
//     its demand is recorded for all clients together, so it is refused
//     (ErrUnsupported).
//
// # Cost
//
// Runs of rejections are skipped with arithmetic (to the next refill,
// window or returning grant), attempts in one millisecond are decided
// together, and the rest of a step is admitted at once when the limiter is
// sure to admit it: a token bucket one short of full whose attempts come an
// interval or more apart, a sliding window with room for all of them, or
// one holding only this step's grants whose spacing cannot fill it. A fixed
// window costs a decision per window. What remains costs a decision per
// admitted attempt, so a limiter that admits at its rate all along costs
// the most. A sliding window keeps one entry per run of grants in the last
// IntervalMS. BenchmarkReplayDay measures a day of 10 s points.
package whatif
