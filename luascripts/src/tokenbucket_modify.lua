-- tokenbucket_modify: change a token bucket's max_permits and interval,
-- after settling the refill up to now at the old ones.
--
-- KEYS[1] -> the bucket (HASH: last_mill_second, stored_permits, max_permits, interval, app)
-- ARGV[1] -> new max_permits (whole number >= 1)
-- ARGV[2] -> new interval, milliseconds per permit (number > 0, may be fractional)
--
-- Returns:
--    1  modified (stored permits clamped to the new capacity; a bucket whose
--       old state could not be settled keeps its usable parts and restarts
--       the rest: last_mill_second = now, stored_permits = 0)
--   -2  no bucket at KEYS[1] (initialise it first); nothing is created
--   -4  an argument is out of range
--   -5  the key holds something that is not a bucket; it is left alone
local bucket = KEYS[1]
local new_max = tonumber(ARGV[1])
local new_interval = tonumber(ARGV[2])

--#include lib/finite.lua
--#include lib/fmt.lua

if not (finite(new_max) and finite(new_interval))
    or new_max < 1 or new_max ~= math.floor(new_max) or new_interval <= 0 then
  return -4
end

local kind = redis.call('TYPE', bucket)['ok']
if kind == 'none' then
  return -2
elseif kind ~= 'hash' then
  return -5
end
local f = redis.call('HMGET', bucket, 'last_mill_second', 'stored_permits', 'max_permits', 'interval', 'app')
if not f[5] then
  return -5
end

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local last = tonumber(f[1])
local stored = tonumber(f[2])
local max = tonumber(f[3])
local interval = tonumber(f[4])
if finite(last) and finite(stored) and stored >= 0 and finite(max) and max >= 1
    and finite(interval) and interval > 0 then
  local elapsed = now - last
  if elapsed > 0 then
    local k = math.floor(elapsed / interval)
    if stored + k >= max then
      stored = max
      last = now
    elseif k > 0 then
      stored = stored + k
      last = last + k * interval
    end
  end
  if stored > max then
    stored = max
  end
else
  if not finite(last) then
    last = now
  end
  if not finite(stored) or stored < 0 then
    stored = 0
  end
end
if stored > new_max then
  stored = new_max
end

redis.call('HSET', bucket,
  'max_permits', ARGV[1],
  'interval', ARGV[2],
  'stored_permits', fmt(stored),
  'last_mill_second', fmt(last))
return 1
