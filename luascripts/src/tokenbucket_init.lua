-- tokenbucket_init: create a token bucket ("ratelimit:<app>" layout) unless one is there.
--
-- KEYS[1] -> the bucket (HASH: last_mill_second, stored_permits, max_permits, interval, app)
-- ARGV[1] -> initial stored_permits (whole number, 0..max_permits)
-- ARGV[2] -> max_permits, the capacity (whole number >= 1)
-- ARGV[3] -> interval, milliseconds per permit (number > 0, may be fractional)
-- ARGV[4] -> app, the non-empty marker that says "configured"
--
-- Returns:
--    1  created, or a bucket was already configured (left exactly as it was,
--       so a second init never resets a live bucket)
--   -4  an argument is out of range
--   -5  the key holds something that is not a bucket (a string, a list, a
--       hash without "app"); it is left alone rather than overwritten
local bucket = KEYS[1]
local initial = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local interval = tonumber(ARGV[3])
local app = ARGV[4]

--#include lib/finite.lua

if not (finite(initial) and finite(max) and finite(interval))
    or max < 1 or max ~= math.floor(max)
    or initial < 0 or initial > max or initial ~= math.floor(initial)
    or interval <= 0 or app == nil or app == '' then
  return -4
end

local kind = redis.call('TYPE', bucket)['ok']
if kind == 'hash' then
  if redis.call('HEXISTS', bucket, 'app') == 1 then
    return 1
  end
  return -5
elseif kind ~= 'none' then
  return -5
end

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('HSET', bucket,
  'last_mill_second', string.format('%d', now),
  'stored_permits', ARGV[1],
  'max_permits', ARGV[2],
  'interval', ARGV[3],
  'app', app)
return 1
