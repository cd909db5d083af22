-- rwlock_read_acquire: take or re-enter the read side of a Redisson
-- RReadWriteLock and count the attempt in the lock's stats.
--
-- KEYS[1] -> lock (HASH): mode, holder fields -> reentry counts
-- KEYS[2] -> stats of the lock (HASH), wire.StatsKey(name)
-- KEYS[3] -> the level key to create, wire.RWReadLevelKey for level
--            ARGV[4] + 1
-- KEYS[4] -> (optional) hold times (HASH), wire.HeldKey(name): holder field
--            -> "<acquired ms> <renewed ms>" (Redis time); a new read holder
--            records both, a re-entry moves "renewed"
-- KEYS[5] -> (optional) poll waiters (HASH), wire.PollWaitersKey(name):
--            id -> "<since ms> <deadline ms> <holder>"
-- ARGV[1] -> lease in milliseconds (PEXPIRE of the level key; the lock's
--            expiry is raised to it, never lowered: other readers may hold
--            longer leases)
-- ARGV[2] -> read field "<uuid>:<owner>"
-- ARGV[3] -> write field of the same owner, "<uuid>:<owner>:write"
-- ARGV[4] -> the caller's idea of the current read count of ARGV[2]
-- ARGV[5] -> (optional) ms the caller has waited so far, measured by its
--            client since the first attempt of this wait; "0" or absent
--            for a first attempt. A grant with a wait records it.
-- ARGV[6] -> (optional, with KEYS[5]) poll-waiter id of a waiting caller:
--            a failed attempt writes its entry in KEYS[5], the grant
--            deletes it
-- ARGV[7] -> (with ARGV[6]) lifetime of that entry in ms
--
-- Returns:
--   nil      -> taken (new level ARGV[4] + 1). Counted "a".
--   integer  -> a writer of another owner has it: its PTTL in ms (-1 when
--               the key has no expiry). Counted "r".
--   {count}  -> ARGV[4] was wrong: the real read count; nothing changed,
--               nothing counted.
--   error    -> "WRONGTYPE ...": KEYS[1] is not a read-write lock (another
--               type, or a hash without a valid mode). Counted "e".
local lock = KEYS[1]
local stats = KEYS[2]
local level_key = KEYS[3]
local lease = tonumber(ARGV[1])
local read_field = ARGV[2]
local write_field = ARGV[3]
local expected = tonumber(ARGV[4])
local held = KEYS[4]
local waited = tonumber(ARGV[5] or '') or 0
local poll_id = ARGV[6] or ''
local poll_ttl = ARGV[7]
local polls = KEYS[5]

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
    -- Someone's hash without a mode: Redisson would write into it; refuse.
    record('e')
    return redis.error_reply('WRONGTYPE hash has no read-write lock mode')
  end
  if expected ~= 0 then
    return {0}
  end
  redis.call('HSET', lock, 'mode', 'read', read_field, '1')
  redis.call('SET', level_key, '1', 'PX', lease)
  redis.call('PEXPIRE', lock, lease)
  hold(read_field, true, true)
  granted()
  return nil
end

if mode ~= 'read' and mode ~= 'write' then
  record('e')
  return redis.error_reply('WRONGTYPE hash has an unknown read-write lock mode')
end

if mode == 'read' or redis.call('HEXISTS', lock, write_field) == 1 then
  local count = tonumber(redis.call('HGET', lock, read_field)) or 0
  if count ~= expected then
    return {count}
  end
  redis.call('HINCRBY', lock, read_field, '1')
  redis.call('SET', level_key, '1', 'PX', lease)
  if redis.call('PTTL', lock) < lease then
    redis.call('PEXPIRE', lock, lease)
  end
  hold(read_field, count == 0, false)
  granted()
  return nil
end

polled(read_field)
record('r')
return redis.call('PTTL', lock)
