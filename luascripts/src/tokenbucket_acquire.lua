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
-- it was taken at, and interval an integer when it is whole, else a string,
-- since a Lua number reply would be truncated: the stored text when it is a
-- plain decimal, else the number it reads as.
local bucket = KEYS[1]
local stats = KEYS[2]
local want = ARGV[1]

local clock = redis.call('TIME')
local f = redis.call('HMGET', bucket, 'last_mill_second', 'stored_permits', 'max_permits', 'interval', 'app')
local floor = math.floor
local now_us = clock[1] * 1000000 + clock[2]
local now = floor(now_us / 1000)
if not f[5] then
  return {0, 0, 0, now, 0, '0'}
end

--#include lib/record.lua

-- x - x is 0 for a finite number only (nan and inf give nan).
local last, stored, max, interval = tonumber(f[1]), tonumber(f[2]), tonumber(f[3]), tonumber(f[4])
if not (last and stored and max and interval and last - last == 0 and stored - stored == 0
    and max - max == 0 and interval - interval == 0 and interval > 0 and max >= 1 and stored >= 0) then
  record('e')
  return {-3, 0, 0, now, 0, '0'}
end

-- The caller parses a string interval back; Lua's tonumber takes more
-- spellings (spaces, hex) than a plain decimal, so only those are returned
-- verbatim.
local shown = interval
if interval ~= floor(interval) or interval >= 1e15 then
  shown = f[4]
  if not string.find(shown, '^%d+%.?%d*$') then
    shown = string.format('%.17g', interval)
  end
end

want = tonumber(want)
if not (want and want >= 1 and want <= max and want == floor(want)) then
  record('e')
  return {-4, floor(math.min(stored, max)), 0, now, floor(max), shown}
end

-- A clock behind last_mill_second (a client that passed its own time) adds
-- nothing; moved says last_mill_second is to be written.
local moved = false
local elapsed = now - last
if elapsed > 0 then
  local k = floor(elapsed / interval)
  if stored + k >= max then
    stored, last, moved = max, now, true
  elseif k > 0 then
    stored, last, moved = stored + k, last + k * interval, true
  end
end
if stored > max then
  stored = max
end

if stored < want then
  -- The missing permits are complete at last + need*interval, and this script
  -- sees whole milliseconds only, so the caller may come back at the next one.
  local retry = math.ceil(last + (want - stored) * interval) * 1000 - now_us
  record('r')
  return {-1, floor(stored), retry > 1 and retry or 1, now, floor(max), shown}
end
stored = stored - want
record('a')

-- A whole number below 1e15 reads the same in %d as in %.17g, which costs
-- twice as much.
local function num(x)
  if x >= 0 and x < 1e15 and x == floor(x) then
    return string.format('%d', x)
  end
  return string.format('%.17g', x)
end
if moved then
  redis.call('HSET', bucket, 'stored_permits', num(stored), 'last_mill_second', num(last))
else
  redis.call('HSET', bucket, 'stored_permits', num(stored))
end
return {1, floor(stored), 0, now, floor(max), shown}
