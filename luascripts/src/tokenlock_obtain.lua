-- tokenlock_obtain: take a token lock (the SET NX PX layout redsync and
-- bsm/redislock use) and count the attempt in the stats.
--
-- KEYS[1] -> the lock (STRING): the holder's random token
-- KEYS[2] -> stats (HASH), wire.StatsKey(name)
-- KEYS[3] -> (optional) hold times (HASH), wire.HeldKey(name): token ->
--            "<acquired ms> <renewed ms>" (Redis time), expiring with the
--            lock; a re-obtain keeps "acquired" and moves "renewed"
-- KEYS[4] -> (optional) poll waiters (HASH), wire.PollWaitersKey(name):
--            id -> "<since ms> <deadline ms> <holder>"
-- ARGV[1] -> token
-- ARGV[2] -> lease in milliseconds (PX)
-- ARGV[3] -> (optional) ms the caller has waited so far, measured by its
--            client since the first attempt of this wait; "0" or absent
--            for a first attempt. A grant with a wait records it.
-- ARGV[4] -> (optional, with KEYS[4]) poll-waiter id of a waiting caller:
--            a failed attempt writes its entry in KEYS[4], the grant
--            deletes it
-- ARGV[5] -> (with ARGV[4]) lifetime of that entry in ms
--
-- Returns {taken, pttl_ms}:
--   {1, lease} -> taken ("a"); a caller that already holds the lock (same
--                 token) gets it again with its lease restarted, as a
--                 re-obtain after a retry must not fail
--   {0, pttl}  -> held by another token (or the key is not a string); pttl
--                 is its remaining lease, -1 when it has none ("r")
local lock = KEYS[1]
local stats = KEYS[2]
local token = ARGV[1]
local lease = ARGV[2]
local held = KEYS[3]
local waited = tonumber(ARGV[3] or '') or 0
local poll_id = ARGV[4] or ''
local poll_ttl = ARGV[5]
local polls = KEYS[4]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

--#include lib/record.lua
--#include lib/record_wait.lua
--#include lib/granted.lua
--#include lib/polled.lua

--#include lib/hold.lua

if redis.call('SET', lock, token, 'NX', 'PX', lease) then
  hold(token, true, true)
  granted()
  return {1, tonumber(lease)}
end
local kind = redis.call('TYPE', lock)['ok']
if kind == 'string' and redis.call('GET', lock) == token then
  redis.call('PEXPIRE', lock, lease)
  hold(token, false, true)
  granted()
  return {1, tonumber(lease)}
end
polled(token)
record('r')
return {0, redis.call('PTTL', lock)}
