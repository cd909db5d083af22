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
// Decided attempt by attempt (see Cost), time is whole milliseconds, as
// the scripts see Redis TIME, and the token bucket's arithmetic is the
// script's float64 arithmetic on absolute Unix milliseconds, so the same
// arrivals give the same decisions (TestReplayMatchesLiteralScripts).
//
// Errors (counted "e") decided nothing and are not demand.
//
// # Demand
//
// The console hands Replay the finest demand it has: the 200 ms stats
// buckets it still holds (Request.Fine; web/live keeps three minutes of
// them) and before them the hour's 10 s history steps (Request.Demand; a
// history step lags the buckets by one, Series.LagMS, and its newest step
// ends at the flush, Series.EndMS). The history step the buckets begin in
// keeps what they do not hold of it.
//
// # Arrival models
//
// A step says how many attempts it had and what the limiter did to them,
// not when within the step they came, and the rejections of a limiter
// depend on it: bursts meet an empty bucket or a full window more often
// than evenly spread attempts. Both outcomes say how bursty a step was:
// what today's settings admitted is what the arrivals must make them
// admit. So each step's attempts are fitted, step by step from the state
// the steps before left, to what was recorded: a base share of the step's
// mean rate all along (0, 25, 50 or 75 %) and the rest bunched into the
// loosest (or the tightest) fraction of the step at its end or its start
// that keeps the replay's running error within the step's tolerance (half
// a rounding, and half what a late tick moving a bucket between history
// steps would move, Series.EdgeMS). Where a step cannot be fitted, the
// fit goes back over the steps within the limiter's memory (a window, or
// the time a bucket takes to fill), pushing one step's attempts to its
// very start or end, as when an attempt opened a window just before
// another ended. A step no arrivals of its own can fit from any state
// the steps before leave (the newest history step, flushed while it
// fills: a few hundred ms rejected whole because the window filled
// before it is still full, whatever phase the fit gave the window) keeps
// its miss, and the steps before it within the limiter's memory make up
// the count: they are fitted to leave the running error the other way,
// so that it is back within tolerance after the step. Going back is
// bounded by a budget of replays per fit; a step's own fit is bounded
// on its own and never waits on that budget, so a few steps that cannot
// be fitted leave the steps after them fitted still. At the start of
// the series the limiter is idle: a token bucket is full, no window is
// open, no grant is out; the fit of the first steps makes up for it.
//
// Other models keep the bunch fixed, in 2 %, 10 % or half of the step at
// its end or its start, and fit the share spread evenly instead: demand
// that is steady for seconds and changes rate within a step, or comes in
// bursts of other widths. They are not part of the answer, only of the
// band (below).
//
// # Answer, band and check
//
// Every model is replayed at the proposed settings. The answer is the
// mean of the models whose replay at today's settings comes within
// MaxTrustedErrorPct of the rejections recorded (when none does, those
// within MaxTrustedErrorPct of the closest); Result.Check is that mean replayed at today's settings beside
// what was recorded. The band (Prediction.Low, High) spans those models,
// and the unfitted evenly spread replay too when the buckets replayed on
// their own are further off than that (the time of attempts within a
// bucket still moves the outcome), and, step by step, the fewest and the
// most any model that fits the step at today's settings admits there,
// widened by the larger of the two errors. A prediction is as good as
// its check: over 2 % the console says so above the numbers.
//
// # What it gets wrong
//
//   - The arrivals that fit today's settings are not the only ones that
//     do; at other settings they part, which is what the band shows. It
//     is narrow where 200 ms buckets pin the arrivals down and wide over
//     10 s steps of bursty demand at rates far from today's.
//   - Retries are counted as demand. A client that retries after a
//     rejection (store's Acquire, Redisson's acquire) makes several
//     attempts for one request: at a higher rate the replay admits retries
//     that would never have been sent, at a lower rate it misses retries
//     that would have been.
//   - Settings edited inside the span are not replayed: every step is
//     fitted to today's settings and replayed at the proposed ones.
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
// Up to DiscreteMax attempts, attempts are decided one by one by a
// transcription of the script (runs of rejections skipped with
// arithmetic); above it each run of arrivals is decided in closed form
// as a fluid (fluid.go), so a replay costs a bounded amount per step
// whatever the attempts: an hour of a busy limiter is a few hundred
// steps and a millisecond or two. A Runner fits a limiter's demand once
// per history flush, replays each proposal once per flush, and runs at
// most Runner.Slots of them at once: a crowd of viewers waits for, or is
// refused with ErrBusy by, one core's worth of replays, and never slows
// the console's tick. BenchmarkReplayBusyHour measures one what-if.
package whatif
