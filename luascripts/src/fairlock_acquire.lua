-- fairlock_acquire: take or re-enter a Redisson RFairLock, queueing the
-- caller when it must wait, and count the attempt in the lock's stats.
--
-- KEYS[1] -> lock (HASH): "<uuid>:<owner>" -> reentry count, and the
--            holder's hold record (wire.HoldField): a new hold records
--            "<now> <now>", a re-entry keeps "acquired" and moves "renewed"
-- KEYS[2] -> queue (LIST), wire.FairLockQueueKey(name): waiter ids in order
-- KEYS[3] -> deadlines (ZSET), wire.FairLockTimeoutKey(name): waiter id ->
--            deadline, ms since the epoch (Redis time)
-- KEYS[4] -> stats of the lock (HASH), wire.StatsKey(name)
-- ARGV[1] -> lease in milliseconds (the lock's PEXPIRE)
-- ARGV[2] -> holder field and waiter id "<uuid>:<owner>"
-- ARGV[3] -> thread wait time in milliseconds (Redisson's threadWaitTime)
-- ARGV[4] -> "1" to queue the caller (or refresh its place) when it cannot
--            take the lock; "0" for an attempt that must not queue (TryLock)
-- ARGV[5] -> (optional) ms the caller has waited so far, measured by its
--            client since the first attempt of this wait; "0" or absent
--            for a first attempt. A grant with a wait records it
--            (record_wait).
--
-- Returns:
--   nil     -> taken (new hold or re-entry). Counted "a".
--   integer -> not taken; ms worth waiting before the next attempt: the
--              holder's PTTL (-1 when the key has no expiry), or, when the
--              lock is free but an earlier waiter is at the head, how long
--              until that waiter is dropped if it never comes. Counted "r".
--   error   -> "WRONGTYPE ...": KEYS[1] is not a hash. Counted "e".
local lock = KEYS[1]
local queue = KEYS[2]
local timeouts = KEYS[3]
local stats = KEYS[4]
local lease = ARGV[1]
local holder = ARGV[2]
local wait = tonumber(ARGV[3])
local enqueue = ARGV[4] == '1'
local waited = tonumber(ARGV[5] or '') or 0

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

--#include lib/stamp.lua
--#include lib/renewed.lua

--#include lib/record.lua

-- Drop dead heads (bounded per call; the next call drops more).
for _ = 1, 64 do
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

--#include lib/record_wait.lua

-- count_grant counts the caller's grant, with its wait if it waited.
local function count_grant()
  if waited > 0 then
    record_wait(waited)
  else
    record('a')
  end
end

-- The caller's field and hold record in one read.
local mine = redis.pcall('HMGET', lock, holder, hold_field(holder))
if mine.err then
  record('e')
  return mine
end
if mine[1] then
  redis.call('HINCRBY', lock, holder, '1')
  redis.call('HSET', lock, hold_field(holder), renewed(mine[2]))
  redis.call('PEXPIRE', lock, lease)
  count_grant()
  return nil
end

local head = redis.call('LINDEX', queue, '0')
local pttl = redis.call('PTTL', lock)
if pttl == -2 and (not head or head == holder) then
  if head then
    redis.call('LPOP', queue)
    -- Redisson's arithmetic: each deadline was chained one wait time
    -- behind the one before it, so when the head leaves the queue every
    -- remaining deadline moves one wait time earlier. Redisson clients do
    -- this on their acquires too; doing the same keeps both kinds of
    -- deadline on one scale, so neither drops the other's live waiters.
    for _, id in ipairs(redis.call('ZRANGE', timeouts, '0', '-1')) do
      if id ~= holder then
        redis.call('ZINCRBY', timeouts, -wait, id)
      end
    end
  end
  redis.call('ZREM', timeouts, holder)
  redis.call('HSET', lock, holder, '1', hold_field(holder), stamp())
  redis.call('PEXPIRE', lock, lease)
  count_grant()
  return nil
end

local wait_hint = pttl
if pttl == -2 then
  -- Free, but reserved for the head until it comes or is dropped.
  wait_hint = math.max(1, (tonumber(redis.call('ZSCORE', timeouts, head)) or now) - now)
end

if enqueue then
  local until_free = math.max(pttl, 0)
  local deadline = now + until_free + wait
  local current = tonumber(redis.call('ZSCORE', timeouts, holder))
  if current then
    if current < deadline then
      redis.call('ZADD', timeouts, deadline, holder)
    end
  else
    -- A new waiter's place is behind the last one's (Redisson chains
    -- deadlines so a slow queue does not look dead).
    local last = redis.call('LINDEX', queue, '-1')
    local behind = last and tonumber(redis.call('ZSCORE', timeouts, last))
    if behind and behind + wait > deadline then
      deadline = behind + wait
    end
    redis.call('ZADD', timeouts, deadline, holder)
    redis.call('RPUSH', queue, holder)
  end
end

record('r')
return wait_hint
