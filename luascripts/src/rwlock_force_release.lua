-- rwlock_force_release: the console removes one holder of a Redisson
-- RReadWriteLock, every reentry level, as that holder's own unlocks would.
--
-- KEYS[1]   -> the lock (HASH): mode -> read|write, holder -> reentry count
-- KEYS[2]   -> hold times (HASH), wire.HeldKey(name): the holder's record
--              goes with it, the hash with the lock
-- KEYS[3..] -> the holder's read-level keys, wire.RWReadLevelKey for
--              1..count (none for a writer field "<uuid>:<thread>:write")
-- ARGV[1] -> channel, wire.RWLockChannel(name): when the lock is freed
--            "1" (Redisson's READ_UNLOCK_MESSAGE) is published after a
--            writer, "0" (UNLOCK_MESSAGE) after the last reader
-- ARGV[2] -> holder field the admin saw
-- ARGV[3] -> its reentry count the caller read (KEYS were built from it)
-- ARGV[4] -> "1" to SPUBLISH as well as PUBLISH, else "0" (announce)
--
-- Returns:
--    2 -> the lock was freed: key deleted, message published
--    1 -> the holder was removed; others still hold the lock (a writer
--         that leaves readers of its own behind turns it into a read lock)
--    0 -> no such key
--   -1 -> the holder does not hold it; nothing changed
--   -2 -> the key is not a read-write lock; nothing changed
--   -3 -> the holder's count changed since it was read; nothing changed
local lock = KEYS[1]
local channel = ARGV[1]
local holder = ARGV[2]
local seen_count = ARGV[3]
local sharded = ARGV[4] == '1'
local held = KEYS[2]

--#include lib/announce.lua

local kind = redis.call('TYPE', lock)['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'hash' then
  return -2
end
local mode = redis.call('HGET', lock, 'mode')
if mode ~= 'read' and mode ~= 'write' then
  return -2
end
local count = redis.call('HGET', lock, holder)
if not count then
  return -1
end
if count ~= seen_count then
  return -3
end

redis.call('HDEL', lock, holder)
redis.call('HDEL', held, holder)
for i = 3, #KEYS do
  redis.call('DEL', KEYS[i])
end

local writer = string.sub(holder, -6) == ':write'
if redis.call('HLEN', lock) > 1 then
  if writer then
    redis.call('HSET', lock, 'mode', 'read')
  end
  return 1
end
redis.call('DEL', lock, held)
if writer then
  announce(channel, '1')
else
  announce(channel, '0')
end
return 2
