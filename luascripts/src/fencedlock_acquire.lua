-- fencedlock_acquire: take or re-enter a Redisson RFencedLock and hand out
-- its next fencing token, counting the attempt in the lock's stats, in one
-- step.
--
-- Layout (Redisson's): the RLock hash <name> ("<uuid>:<owner>" -> reentry
-- count, PEXPIRE lease; released by lock_release.lua, "0" on
-- "redisson_lock__channel:{<name>}") plus the counter
-- "redisson_lock_token:{<name>}", INCRemented by every successful acquire,
-- re-entries included, as Redisson does, and never expired or deleted: the
-- guarded resource rejects any token below the last one it saw, so a holder
-- that lost the lock (lease ran out, force-unlock) cannot write after the
-- next one did.
--
-- Seeding: a missing token key (first use, or lost when Redis restarted
-- without persistence, or was failed over to a replica that had not got
-- it) is first SET to Redis TIME in microseconds, then INCRemented. Tokens
-- then keep growing across such a loss: the tokens handed out before it
-- were at most the older seed plus one per acquire since, which stays
-- below the new seed as long as the lock averaged fewer than a million
-- acquires a second and the server clock did not step back. The first
-- token of a new lock is therefore about 1.8e15, not 1; it fits a signed
-- 64-bit integer and a Lua/JSON double (below 2^53) for centuries.
--
-- Redisson compatibility: Redisson's RFencedLock only INCRs this key, so
-- its clients continue above a seeded value and the layout is unchanged.
-- A Redisson client that is the first to acquire after the key was lost
-- still starts again from 1 (it does not seed); mixed deployments that
-- need fencing across restarts must let a lockwarden client take the lock
-- first, or enable persistence.
--
-- KEYS[1] -> lock (HASH): "<uuid>:<owner>" -> reentry count
-- KEYS[2] -> fencing token (STRING counter), "redisson_lock_token:{<name>}"
-- KEYS[3] -> stats of the lock (HASH), store.StatsKey(name)
-- KEYS[4] -> (optional) hold times (HASH), store.HeldKey(name), as in
--            lock_acquire.lua: a new hold records "<now> <now>", a re-entry
--            keeps "acquired" and moves "renewed"
-- ARGV[1] -> lease in milliseconds (the lock's PEXPIRE)
-- ARGV[2] -> holder field "<uuid>:<owner>"
-- ARGV[3] -> (optional) ms this call has waited before this attempt, "0"
--            or absent when none of its attempts failed yet
--            (store/wait_clock.go); a grant after a wait adds it to the
--            stats bucket as lock_acquire.lua's record_wait does
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
local held = KEYS[4]
local waited = tonumber(ARGV[3]) or 0

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

--#include lib/record.lua
--#include lib/record_wait.lua

local mine = redis.pcall('HEXISTS', lock, holder)
if type(mine) == 'table' then
  record('e')
  return mine
end
if mine == 0 and redis.call('EXISTS', lock) == 1 then
  record('r')
  return {0, redis.call('PTTL', lock)}
end
-- The token first: a key that is not a counter fails here, before the lock
-- is touched. A missing key is seeded (see the header); the seed is built
-- as text so that no float formatting can round it.
if redis.call('EXISTS', token_key) == 0 then
  redis.call('SET', token_key, t[1] .. string.format('%06d', tonumber(t[2])))
end
local token = redis.pcall('INCR', token_key)
if type(token) == 'table' then
  record('e')
  return redis.error_reply('WRONGTYPE fencing token key does not hold a counter')
end
redis.call('HINCRBY', lock, holder, '1')
redis.call('PEXPIRE', lock, lease)
if held then
  local since = now
  if mine == 1 then
    local v = redis.call('HGET', held, holder)
    since = v and string.match(v, '^(%d+) ') or '0'
  end
  redis.call('HSET', held, holder, since .. ' ' .. now)
  redis.call('PEXPIRE', held, lease)
end
if waited > 0 then
  record_wait(waited)
else
  record('a')
end
return {1, token}
