-- fairlock_unlock: give back one level of a Redisson RFairLock; the last
-- deletes the lock and wakes only the live waiter at the queue's head.
--
-- KEYS[1] -> lock (HASH): "<uuid>:<owner>" -> reentry count, and the
--            holder's hold record (wire.HoldField), which goes with it
-- KEYS[2] -> queue (LIST), wire.FairLockQueueKey(name)
-- KEYS[3] -> deadlines (ZSET), wire.FairLockTimeoutKey(name)
-- KEYS[4] -> (optional) stats of the lock (HASH), wire.StatsKey(name):
--            a refused release is recorded there as a late one
--            (lib/late.lua)
-- ARGV[1] -> lease in milliseconds, re-armed while levels remain
-- ARGV[2] -> holder field "<uuid>:<owner>"
-- ARGV[3] -> channel prefix, wire.UnlockChannel(name); a waiter's channel
--            is the prefix, ':' and its id
-- ARGV[4] -> message (Redisson's UNLOCK_MESSAGE "0")
-- ARGV[5] -> "1" to SPUBLISH as well as PUBLISH, else "0" (announce)
--
-- Returns:
--   nil -> the caller does not hold the lock (absent, someone else's, not a
--          hash); the lock is unchanged, but a lock already gone still
--          wakes the head waiter, as Redisson does, since nobody else will;
--          with KEYS[4] the late release of a hash or no key is recorded
--   0   -> one level released, still held; lease restarted
--   1   -> released: key deleted, the head waiter (if any) told
local lock = KEYS[1]
local queue = KEYS[2]
local timeouts = KEYS[3]
local lease = ARGV[1]
local holder = ARGV[2]
local prefix = ARGV[3]
local message = ARGV[4]
local sharded = ARGV[5] == '1'
local stats = KEYS[4]

--#include lib/announce.lua

local function wake_head()
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  for _ = 1, 64 do
    local first = redis.call('LINDEX', queue, '0')
    if not first then
      return
    end
    local deadline = tonumber(redis.call('ZSCORE', timeouts, first))
    if deadline and deadline > now then
      announce(prefix .. ':' .. first, message)
      return
    end
    redis.call('ZREM', timeouts, first)
    redis.call('LPOP', queue)
  end
end

local count = redis.pcall('HGET', lock, holder)
if type(count) == 'string' then
  if redis.call('HINCRBY', lock, holder, '-1') > 0 then
    redis.call('PEXPIRE', lock, lease)
    return 0
  end
  redis.call('DEL', lock)
  wake_head()
  return 1
end
if count == false and redis.call('EXISTS', lock) == 0 then
  wake_head()
end
if count ~= false or not stats then
  return nil
end

--#include lib/late.lua

late('release', holder, next_holder(redis.call('HGETALL', lock)))
return nil
