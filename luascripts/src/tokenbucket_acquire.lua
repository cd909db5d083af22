-- tokenbucket_acquire: take permits from a token bucket ("ratelimit:<app>"
-- layout) by Redis time, counting every decision in the stats.
--
-- KEYS[1] -> the bucket (HASH: last_mill_second, stored_permits, max_permits, interval, app)
-- KEYS[2] -> the bucket's stats (HASH, wire.StatsKey(KEYS[1]))
-- ARGV[1] -> permits to take (whole number, 1..max_permits)
--
-- Returns {code, remaining, retry_after_us, now_ms, max_permits, interval}:
--    1  taken ("a")
--    0  no "app" field: no limiter configured here, so no limit; nothing is written
--   -1  not enough permits now; retry_after_us says when there will be ("r")
--   -3  the bucket is corrupt (a field is not a finite number, interval <= 0,
--       max_permits < 1 or stored_permits < 0); nothing but the stats ("e")
--       is written
--   -4  ARGV[1] is not a whole number in 1..max_permits, so it can never
--       succeed ("e")
-- remaining is the whole permits left after the decision, now_ms the Redis time
-- it was taken at, and interval is returned as a string because it may be
-- fractional (a Lua number reply would be truncated): the stored text when it
-- is a plain decimal, else the number it reads as.
local bucket = KEYS[1]
local stats = KEYS[2]
local want = tonumber(ARGV[1])

local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local now = math.floor(now_us / 1000)

local f = redis.call('HMGET', bucket, 'last_mill_second', 'stored_permits', 'max_permits', 'interval', 'app')
if not f[5] then
  return {0, 0, 0, now, 0, '0'}
end

--#include lib/record.lua
--#include lib/finite.lua
--#include lib/fmt.lua

local last = tonumber(f[1])
local stored = tonumber(f[2])
local max = tonumber(f[3])
local interval = tonumber(f[4])
if not (finite(last) and finite(stored) and finite(max) and finite(interval))
    or interval <= 0 or max < 1 or stored < 0 then
  record('e')
  return {-3, 0, 0, now, 0, '0'}
end

-- The caller parses the interval back; Lua's tonumber takes more spellings
-- (spaces, hex) than a plain decimal, so only those are returned verbatim.
local shown = f[4]
if not string.find(shown, '^%d+%.?%d*$') then
  shown = fmt(interval)
end

if not finite(want) or want < 1 or want ~= math.floor(want) or want > max then
  record('e')
  return {-4, math.floor(math.min(stored, max)), 0, now, math.floor(max), shown}
end

-- A clock behind last_mill_second (a client that passed its own time) adds nothing.
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

if stored < want then
  -- The missing permits are complete at last + need*interval, and this script
  -- sees whole milliseconds only, so the caller may come back at the next one.
  local ready = math.ceil(last + (want - stored) * interval)
  record('r')
  return {-1, math.floor(stored), math.max(1, ready * 1000 - now_us), now, math.floor(max), shown}
end
stored = stored - want
record('a')
redis.call('HSET', bucket, 'stored_permits', fmt(stored), 'last_mill_second', fmt(last))
return {1, math.floor(stored), 0, now, math.floor(max), shown}
