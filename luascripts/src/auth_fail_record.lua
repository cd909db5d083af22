-- auth_fail_record: count one wrong token; past the free failures of the
-- source, or of all sources together, each one doubles the source's wait.
--
-- KEYS[1] -> the source's failures (HASH: n, until in Redis ms)
-- KEYS[2] -> every source's failures (HASH: n)
-- ARGV[1] -> free failures per source
-- ARGV[2] -> free failures of all sources together
-- ARGV[3] -> first wait (ms)
-- ARGV[4] -> longest wait of one source from its own failures (ms)
-- ARGV[5] -> longest overall wait (ms)
-- ARGV[6] -> forget a source's failures after this long without one (ms)
-- ARGV[7] -> forget all sources' failures after this long without one (ms)
--
-- Returns {n, wait}: the source's failures so far and the wait in ms now
-- imposed on it (the longer of its own and the overall one; 0 while free).
local source, all = KEYS[1], KEYS[2]
local free_source, free_all = tonumber(ARGV[1]), tonumber(ARGV[2])
local first = tonumber(ARGV[3])
local max_source, max_all = tonumber(ARGV[4]), tonumber(ARGV[5])
local forget_source, forget_all = tonumber(ARGV[6]), tonumber(ARGV[7])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function backoff(n, free, longest)
  if n <= free then
    return 0
  end
  return math.floor(math.min(longest, first * 2 ^ math.min(n - free - 1, 40)))
end

local n_all = redis.call('HINCRBY', all, 'n', '1')
redis.call('PEXPIRE', all, forget_all)
local n = redis.call('HINCRBY', source, 'n', '1')
local wait = math.max(backoff(n, free_source, max_source), backoff(n_all, free_all, max_all))
if wait > 0 then
  redis.call('HSET', source, 'until', now + wait)
end
redis.call('PEXPIRE', source, forget_source + wait)
return {n, wait}
