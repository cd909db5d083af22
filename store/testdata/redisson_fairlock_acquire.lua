-- redisson_fairlock_acquire: a test-only emulation of the acquire a Redisson
-- client sends for RFairLock.tryLock/lock (RedissonFairLock.tryLockInnerAsync,
-- behaviour of Redisson 3.13.3 and later, threadWaitTime 300000 ms by
-- default). Written from the behaviour, not copied: lockwarden's tests run it
-- as a foreign client next to lockwarden's own fair-lock waiters.
--
-- KEYS[1] -> lock (HASH): "<uuid>:<thread>" -> reentry count
-- KEYS[2] -> queue (LIST) of waiter ids, "redisson_lock_queue:{<name>}"
-- KEYS[3] -> deadlines (ZSET), "redisson_lock_timeout:{<name>}"
-- ARGV[1] -> lease in ms
-- ARGV[2] -> this client's id "<uuid>:<thread>"
-- ARGV[3] -> thread wait time in ms
-- ARGV[4] -> the client's clock in ms (Redisson sends its own time)
--
-- Returns: nil when taken (or re-entered), else ms to wait (the holder's
-- PTTL when the caller is the first waiter, the time until the previous
-- waiter's deadline otherwise).
local lock = KEYS[1]
local queue = KEYS[2]
local deadlines = KEYS[3]
local lease = ARGV[1]
local me = ARGV[2]
local wait = tonumber(ARGV[3])
local clock = tonumber(ARGV[4])

-- Heads whose deadline passed are dead: drop them.
while true do
  local head = redis.call('LINDEX', queue, 0)
  if not head then break end
  local due = tonumber(redis.call('ZSCORE', deadlines, head))
  if due > clock then break end
  redis.call('ZREM', deadlines, head)
  redis.call('LPOP', queue)
end

local head = redis.call('LINDEX', queue, 0)
if redis.call('EXISTS', lock) == 0 and (not head or head == me) then
  redis.call('LPOP', queue)
  redis.call('ZREM', deadlines, me)
  -- Everyone left in the queue moves one wait time earlier.
  for _, id in ipairs(redis.call('ZRANGE', deadlines, 0, -1)) do
    redis.call('ZINCRBY', deadlines, -wait, id)
  end
  redis.call('HSET', lock, me, 1)
  redis.call('PEXPIRE', lock, lease)
  return nil
end

if redis.call('HEXISTS', lock, me) == 1 then
  redis.call('HINCRBY', lock, me, 1)
  redis.call('PEXPIRE', lock, lease)
  return nil
end

local mine = tonumber(redis.call('ZSCORE', deadlines, me))
if mine then
  return mine - wait - clock
end

local last = redis.call('LINDEX', queue, -1)
local ttl
if last and last ~= me then
  ttl = tonumber(redis.call('ZSCORE', deadlines, last)) - clock
else
  ttl = redis.call('PTTL', lock)
end
redis.call('ZADD', deadlines, ttl + wait + clock, me)
redis.call('RPUSH', queue, me)
return ttl
