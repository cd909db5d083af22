-- redisson_limiter_try_set_rate: configure a Redisson RRateLimiter unless
-- one is configured already (Redisson's trySetRate: the first one wins).
--
-- KEYS[1] -> config (HASH: rate, interval, type, keepAliveTime)
-- ARGV[1] -> rate: permits per interval
-- ARGV[2] -> interval in ms
-- ARGV[3] -> type: 0 overall, 1 per client
-- ARGV[4] -> keepAliveTime in ms; 0 writes no keepAliveTime field (the
--            layout of Redisson before 3.35)
--
-- Returns:
--    1 -> configured now
--    0 -> already configured; nothing changed
--   -5 -> KEYS[1] holds something other than a hash; nothing changed
local config = KEYS[1]
local rate = ARGV[1]
local interval = ARGV[2]
local limiter_type = ARGV[3]
local keep_alive = tonumber(ARGV[4])

local kind = redis.call('TYPE', config)['ok']
if kind ~= 'none' and kind ~= 'hash' then
  return -5
end
redis.call('HSETNX', config, 'rate', rate)
redis.call('HSETNX', config, 'interval', interval)
if keep_alive > 0 then
  redis.call('HSETNX', config, 'keepAliveTime', keep_alive)
end
local set = redis.call('HSETNX', config, 'type', limiter_type)
if set == 1 and keep_alive > 0 then
  redis.call('PEXPIRE', config, keep_alive)
end
return set
