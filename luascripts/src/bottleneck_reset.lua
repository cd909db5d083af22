-- bottleneck_reset: the console refills a bottleneck limiter's reservoir as
-- its own refresh does and publishes the capacity, so queued jobs run at once.
--
-- KEYS[1] -> the settings (HASH), "b_<id>_settings"
-- ARGV[1] -> the limiter's id, whose channel "b_<id>" its clients listen on
--
-- Returns:
--    the reservoir after the refill (a number), or
--    0 -> no such key
--   -2 -> not a bottleneck limiter with a reservoir refresh; nothing changed
--#include lib/of_type.lua
local settings = KEYS[1]
local id = ARGV[1]

local wrong = of_type(settings, 'hash')
if wrong then
  return wrong
end
local s = redis.call('HMGET', settings, 'id', 'reservoirRefreshAmount', 'maxConcurrent', 'running')
local amount = tonumber(s[2])
if s[1] ~= id or not amount then
  return -2
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('HSET', settings, 'reservoir', amount, 'lastReservoirRefresh', now)
local capacity = amount
local max_concurrent = tonumber(s[3])
if max_concurrent then
  capacity = math.min(max_concurrent - (tonumber(s[4]) or 0), amount)
end
redis.call('PUBLISH', 'b_' .. id, 'capacity:' .. capacity)
return amount
