-- fairlock_withdraw: take a waiter that gives up out of a Redisson
-- RFairLock's queue, as Redisson does when a tryLock times out.
--
-- KEYS[1] -> lock (HASH)
-- KEYS[2] -> queue (LIST), wire.FairLockQueueKey(name)
-- KEYS[3] -> deadlines (ZSET), wire.FairLockTimeoutKey(name)
-- ARGV[1] -> waiter id "<uuid>:<owner>"
-- ARGV[2] -> channel prefix, wire.UnlockChannel(name)
-- ARGV[3] -> message (Redisson's UNLOCK_MESSAGE "0")
-- ARGV[4] -> "1" to SPUBLISH as well as PUBLISH, else "0" (announce)
-- ARGV[5] -> (optional) thread wait time in milliseconds by which the
--            deadlines behind the waiter move; absent: none move
--
-- Returns:
--   1 -> the waiter was queued and is gone
--   0 -> it was not queued; nothing changed
local lock = KEYS[1]
local queue = KEYS[2]
local timeouts = KEYS[3]
local waiter = ARGV[1]
local prefix = ARGV[2]
local message = ARGV[3]
local sharded = ARGV[4] == '1'
local wait = tonumber(ARGV[5])

--#include lib/announce.lua

local was_head = redis.call('LINDEX', queue, '0') == waiter
if wait then
  -- The whole queue is read, as Redisson's removal does: the shift needs
  -- every place behind the waiter.
  local behind = false
  for _, id in ipairs(redis.call('LRANGE', queue, '0', '-1')) do
    if behind then
      -- XX: a place without a deadline is not given one.
      redis.call('ZADD', timeouts, 'XX', 'INCR', -wait, id)
    elseif id == waiter then
      behind = true
    end
  end
end
local removed = redis.call('LREM', queue, '0', waiter)
redis.call('ZREM', timeouts, waiter)
if removed == 0 then
  return 0
end
if was_head and redis.call('EXISTS', lock) == 0 then
  local next_waiter = redis.call('LINDEX', queue, '0')
  if next_waiter then
    announce(prefix .. ':' .. next_waiter, message)
  end
end
return 1
