-- counter_hit: n hits on an access counter (INCRBY, EXPIRE on the first hit
-- of a window, reject above the limit), counted in the stats.
--
-- KEYS[1] -> the counter (STRING): hits in the current window
-- KEYS[2] -> stats (HASH), wire.StatsKey(name)
-- ARGV[1] -> window in milliseconds
-- ARGV[2] -> limit: the most hits a window admits
-- ARGV[3] -> n: hits this call makes, 1..limit (hand-written INCR limiters make 1)
--
-- Returns {allowed, count, pttl_ms}: allowed 1 ("a") or 0 ("r"); count after
-- these hits (rejected hits count too, as INCR-first limiters count them);
-- the window's PTTL.
local counter = KEYS[1]
local stats = KEYS[2]
local window = ARGV[1]
local limit = tonumber(ARGV[2])
local hits = tonumber(ARGV[3])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

--#include lib/record.lua

local count = redis.call('INCRBY', counter, hits)
-- A counter without expiry (a non-atomic client that died between INCR
-- and EXPIRE) would reject forever: a window starts whenever none runs.
local ttl = redis.call('PTTL', counter)
if count == hits or ttl < 0 then
  redis.call('PEXPIRE', counter, window)
  ttl = tonumber(window)
end
if count > limit then
  record('r')
  return {0, count, ttl}
end
record('a')
return {1, count, ttl}
