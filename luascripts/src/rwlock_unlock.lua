-- rwlock_unlock: give back one read or write level of a Redisson
-- RReadWriteLock; the last level of the last holder deletes the lock.
--
-- KEYS[1] -> lock (HASH): mode, holder fields -> reentry counts
-- KEYS[2] -> hold times (HASH), wire.HeldKey(name): the holder field's
--            record goes with its last level, the hash with the lock
-- KEYS[3] -> (read) the key of the level being released,
--            wire.RWReadLevelKey for level ARGV[5]
-- ARGV[1] -> "read" or "write"
-- ARGV[2] -> the holder field ("<uuid>:<owner>" or "<uuid>:<owner>:write")
-- ARGV[3] -> channel, wire.RWLockChannel(name): a deleted lock publishes
--            "0" (Redisson's UNLOCK_MESSAGE) after a reader, "1"
--            (READ_UNLOCK_MESSAGE) after a writer
-- ARGV[4] -> lease in milliseconds, re-armed while write levels remain
-- ARGV[5] -> (read) the caller's idea of the current read count
-- ARGV[6] -> "1" to SPUBLISH as well as PUBLISH, else "0" (announce)
--
-- Returns:
--   nil     -> the caller does not hold that side (absent, someone else's,
--              not a read-write lock); nothing changed
--   0       -> one level released; the caller still holds the side
--   1       -> the caller's last level: the lock was deleted, message sent
--   2       -> the caller's last level of that side; other holders (or the
--              owner's read levels) keep the lock
--   {count} -> (read) ARGV[5] was wrong: the real count; nothing changed
local lock = KEYS[1]
local held = KEYS[2]
local sharded = ARGV[6] == '1'

--#include lib/announce.lua
local side = ARGV[1]
local field = ARGV[2]
local channel = ARGV[3]
local lease = ARGV[4]

local mode = redis.pcall('HGET', lock, 'mode')
if type(mode) ~= 'string' then
  return nil -- no lock (false), or not a hash (an error table)
end
local count = tonumber(redis.call('HGET', lock, field))
if not count then
  return nil
end

if side == 'write' then
  if mode ~= 'write' then
    return nil
  end
  if redis.call('HINCRBY', lock, field, '-1') > 0 then
    redis.call('PEXPIRE', lock, lease)
    return 0
  end
  redis.call('HDEL', lock, field)
  if redis.call('HLEN', lock) > 1 then
    redis.call('HSET', lock, 'mode', 'read')
    redis.call('HDEL', held, field)
    return 2
  end
  redis.call('DEL', lock, held)
  announce(channel, '1')
  return 1
end

if count ~= tonumber(ARGV[5]) then
  return {count}
end
redis.call('DEL', KEYS[3])
if count > 1 then
  redis.call('HINCRBY', lock, field, '-1')
  return 0
end
redis.call('HDEL', lock, field)
if redis.call('HLEN', lock) > 1 then
  redis.call('HDEL', held, field)
  return 2
end
redis.call('DEL', lock, held)
announce(channel, '0')
return 1
