-- fairlock_force_release: the console breaks a Redisson RFairLock held by
-- the holder the admin saw, and wakes the live waiter at the queue's head.
--
-- KEYS[1] -> the lock (HASH): "<uuid>:<thread>" -> reentry count, and
--            lockwarden's hold record (wire.HoldField), deleted with it
-- KEYS[2] -> queue (LIST), wire.FairLockQueueKey(name): waiter ids in order
-- KEYS[3] -> timeouts (ZSET), wire.FairLockTimeoutKey(name): waiter ->
--            deadline ms
-- ARGV[1] -> channel prefix, wire.UnlockChannel(name); a waiter's channel
--            is the prefix, ':' and its id
-- ARGV[2] -> message (Redisson's UNLOCK_MESSAGE "0")
-- ARGV[3] -> holder field the admin saw
-- ARGV[4] -> "1" to SPUBLISH as well as PUBLISH, else "0" (announce)
--
-- Returns:
--    2 -> released and the next waiter was told
--    1 -> released; nobody was waiting
--    0 -> no such key
--   -1 -> the holder does not hold it; nothing changed
--   -2 -> the key is not a hash; nothing changed
local lock = KEYS[1]
local queue = KEYS[2]
local timeouts = KEYS[3]
local prefix = ARGV[1]
local message = ARGV[2]
local holder = ARGV[3]
local sharded = ARGV[4] == '1'

--#include lib/announce.lua

local kind = redis.call('TYPE', lock)['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'hash' then
  return -2
end
if redis.call('HEXISTS', lock, holder) == 0 then
  return -1
end

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
-- Bounded: each pass removes one waiter.
while true do
  local first = redis.call('LINDEX', queue, '0')
  if not first then
    break
  end
  local deadline = tonumber(redis.call('ZSCORE', timeouts, first))
  if deadline and deadline > now then
    break
  end
  redis.call('ZREM', timeouts, first)
  redis.call('LPOP', queue)
end

redis.call('DEL', lock)
local next_waiter = redis.call('LINDEX', queue, '0')
if next_waiter then
  announce(prefix .. ':' .. next_waiter, message)
  return 2
end
return 1
