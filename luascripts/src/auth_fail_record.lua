-- auth_fail_record: count one wrong token from a source; past the free
-- failures each further one doubles the wait before the next check.
--
-- KEYS[1] -> the source's failures (HASH: n, until in Redis ms)
-- KEYS[2] -> every source's failures (HASH: n, until in Redis ms)
-- ARGV[1] -> free failures per source
-- ARGV[2] -> free failures of all sources together
-- ARGV[3] -> first wait (ms)
-- ARGV[4] -> longest wait of one source (ms)
-- ARGV[5] -> longest wait of all sources (ms)
-- ARGV[6] -> forget a source's failures after this long without one (ms)
-- ARGV[7] -> forget all sources' failures after this long without one (ms)
--
-- Returns {n, wait}: the source's failures so far and the wait in ms now
-- imposed (the longer of the source's and everyone's; 0 while free).
local source, all = KEYS[1], KEYS[2]
local free_source, free_all = tonumber(ARGV[1]), tonumber(ARGV[2])
local first = tonumber(ARGV[3])
local max_source, max_all = tonumber(ARGV[4]), tonumber(ARGV[5])
local forget_source, forget_all = tonumber(ARGV[6]), tonumber(ARGV[7])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function fail(key, free, longest, forget)
  local n = redis.call('HINCRBY', key, 'n', '1')
  local wait = 0
  if n > free then
    wait = math.floor(math.min(longest, first * 2 ^ math.min(n - free - 1, 40)))
    redis.call('HSET', key, 'until', now + wait)
  end
  redis.call('PEXPIRE', key, forget + wait)
  return n, wait
end

local n, wait_source = fail(source, free_source, max_source, forget_source)
local _, wait_all = fail(all, free_all, max_all, forget_all)
return {n, math.max(wait_source, wait_all)}
