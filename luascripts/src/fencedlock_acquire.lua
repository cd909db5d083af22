-- fencedlock_acquire: take or re-enter a Redisson RFencedLock, hand out its
-- next fencing token, and count the attempt in the lock's stats.
--
-- KEYS[1] -> lock (HASH): "<uuid>:<owner>" -> reentry count, and the
--            holder's hold record (wire.HoldField), as in lock_acquire.lua:
--            a new hold records "<now> <now>", a re-entry keeps "acquired"
--            and moves "renewed"
-- KEYS[2] -> fencing token (STRING counter), wire.FencingTokenKey(name)
-- KEYS[3] -> stats of the lock (HASH), wire.StatsKey(name)
-- ARGV[1] -> lease in milliseconds (the lock's PEXPIRE)
-- ARGV[2] -> holder field "<uuid>:<owner>"
-- ARGV[3] -> (optional) ms this call has waited before this attempt, "0"
--            or absent when none of its attempts failed yet
--            (store/wait_clock.go); a grant after a wait records it
--            (record_wait)
--
-- Returns {taken, n}:
--   {1, token} -> taken (new hold or re-entry); token is this acquisition's
--                 (seeded from TIME when the key was missing).
--                 Counted "a", with the wait of ARGV[3] when above 0.
--   {0, pttl}  -> another holder has it: its PTTL in ms, -1 when the key has
--                 no expiry. Counted "r".
--   error      -> "WRONGTYPE ...": KEYS[1] is not a hash, or KEYS[2] not a
--                 counter. Counted "e"; nothing else changes.
local lock = KEYS[1]
local token_key = KEYS[2]
local stats = KEYS[3]
local lease = ARGV[1]
local holder = ARGV[2]
local waited = tonumber(ARGV[3]) or 0

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

--#include lib/stamp.lua
--#include lib/renewed.lua
--#include lib/record.lua
--#include lib/record_wait.lua

-- The caller's field and hold record in one read.
local got = redis.pcall('HMGET', lock, holder, hold_field(holder))
if got.err then
  record('e')
  return got
end
local mine = got[1] and 1 or 0
if mine == 0 and redis.call('EXISTS', lock) == 1 then
  record('r')
  return {0, redis.call('PTTL', lock)}
end
-- The token first: a key that is not a counter fails here, before the lock
-- is touched. A missing key is seeded with TIME in microseconds (why: the
-- package doc of luascripts), built as text so that no float formatting
-- can round it.
if redis.call('EXISTS', token_key) == 0 then
  redis.call('SET', token_key, t[1] .. string.format('%06d', tonumber(t[2])))
end
local token = redis.pcall('INCR', token_key)
if type(token) == 'table' then
  record('e')
  return redis.error_reply('WRONGTYPE fencing token key does not hold a counter')
end
if mine == 1 then
  redis.call('HINCRBY', lock, holder, '1')
  redis.call('HSET', lock, hold_field(holder), renewed(got[2]))
else
  redis.call('HSET', lock, holder, '1', hold_field(holder), stamp())
end
redis.call('PEXPIRE', lock, lease)
if waited > 0 then
  record_wait(waited)
else
  record('a')
end
return {1, token}
