-- rwlock_write_acquire: take or re-enter the write side of a Redisson
-- RReadWriteLock and count the attempt in the lock's stats.
--
-- KEYS[1] -> lock (HASH): mode, holder fields -> reentry counts
-- KEYS[2] -> stats of the lock (HASH), wire.StatsKey(name)
-- KEYS[3] -> (optional) hold times (HASH), wire.HeldKey(name): write field
--            -> "<acquired ms> <renewed ms>" (Redis time); a new hold records
--            both, a re-entry moves "renewed"
-- KEYS[4] -> (optional) poll waiters (HASH), wire.PollWaitersKey(name):
--            id -> "<since ms> <deadline ms> <holder>"
-- ARGV[1] -> lease in milliseconds (the lock's PEXPIRE; a re-entry only
--            ever raises the expiry)
-- ARGV[2] -> write field "<uuid>:<owner>:write"
-- ARGV[3] -> (optional) ms the caller has waited so far, measured by its
--            client since the first attempt of this wait; "0" or absent
--            for a first attempt. A grant with a wait records it.
-- ARGV[4] -> (optional, with KEYS[4]) poll-waiter id of a waiting caller:
--            a failed attempt writes its entry in KEYS[4], the grant
--            deletes it
-- ARGV[5] -> (with ARGV[4]) lifetime of that entry in ms
--
-- Returns:
--   nil     -> taken (new hold or re-entry). Counted "a".
--   integer -> readers (even this owner's own) or another writer have it:
--              its PTTL in ms (-1 when the key has no expiry). Counted "r".
--   error   -> "WRONGTYPE ...": KEYS[1] is not a read-write lock (another
--              type, or a hash without a valid mode). Counted "e".
local lock = KEYS[1]
local stats = KEYS[2]
local lease = tonumber(ARGV[1])
local write_field = ARGV[2]
local held = KEYS[3]
local waited = tonumber(ARGV[3] or '') or 0
local poll_id = ARGV[4] or ''
local poll_ttl = ARGV[5]
local polls = KEYS[4]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

--#include lib/hold.lua
--#include lib/record.lua
--#include lib/record_wait.lua
--#include lib/granted.lua
--#include lib/polled.lua

local mode = redis.pcall('HGET', lock, 'mode')
if type(mode) == 'table' then
  record('e')
  return mode
end

if mode == false then
  if redis.call('EXISTS', lock) == 1 then
    record('e')
    return redis.error_reply('WRONGTYPE hash has no read-write lock mode')
  end
  redis.call('HSET', lock, 'mode', 'write', write_field, '1')
  redis.call('PEXPIRE', lock, lease)
  hold(write_field, true, true)
  granted()
  return nil
end

if mode ~= 'read' and mode ~= 'write' then
  record('e')
  return redis.error_reply('WRONGTYPE hash has an unknown read-write lock mode')
end

if mode == 'write' and redis.call('HEXISTS', lock, write_field) == 1 then
  redis.call('HINCRBY', lock, write_field, '1')
  if redis.call('PTTL', lock) < lease then
    redis.call('PEXPIRE', lock, lease)
  end
  hold(write_field, false, false)
  granted()
  return nil
end

polled(write_field)
record('r')
return redis.call('PTTL', lock)
