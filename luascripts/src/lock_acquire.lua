-- lock_acquire: take or re-enter a reentrant lock in Redisson's RLock
-- layout, queue the caller when it must wait, and count the attempt.
--
-- KEYS[1] -> lock (HASH): field "<client-uuid>:<owner>" -> reentry count
-- KEYS[2] -> stats of the lock (HASH), wire.StatsKey(name)
-- KEYS[3] -> waiter queue (ZSET), wire.LockQueueKey(name): token -> arrival
--            time in microseconds
-- KEYS[4] -> waiter entries (HASH), wire.LockEntriesKey(name): token ->
--            "<deadline ms> <lease ms> <holder>"
-- KEYS[5] -> (optional) hold times (HASH), wire.HeldKey(name): holder ->
--            "<acquired ms> <renewed ms>" (Redis time), expiring with the
--            lock, and "=" -> the token the lock was handed to, gone with
--            its hold. Without KEYS[5] the "=" mark is kept in KEYS[4]
-- KEYS[6] -> (optional) poll waiters (HASH), wire.PollWaitersKey(name):
--            id -> "<since ms> <deadline ms> <holder>"
-- ARGV[1] -> lease in milliseconds (the lock's PEXPIRE)
-- ARGV[2] -> holder field "<client-uuid>:<owner>"
-- ARGV[3] -> unlock channel, wire.UnlockChannel(name)
-- ARGV[4] -> unlock message (Redisson's "0")
-- ARGV[5] -> hand-off channel, wire.LockWakeChannel(name): a waiter's
--            token is published on it
-- ARGV[6] -> "1" to SPUBLISH the unlock message of a hand-off as well,
--            else "0"
-- ARGV[7] -> waiter token; absent or "" when the caller does not wait
--            (TryLock, or the first attempt of Lock), which is never queued
-- ARGV[8] -> (with a token) waiter entry lifetime in ms: an entry not
--            refreshed by a new attempt within it is dropped, so a dead
--            waiter never gets the lock
-- ARGV[9] -> (with a token) lease in ms to set when the lock is handed to
--            this waiter: its own lease, or with replica acknowledgement
--            a short claim it confirms (lock_renew, or its next attempt)
-- ARGV[10] -> (with a token) "1" when an earlier attempt of the same wait
--            queued this token
-- ARGV[11] -> (optional) ms the caller has waited so far, measured by its
--            client since the first attempt of this wait; "0" or absent
--            for a first attempt. A grant with a wait records it.
-- ARGV[12] -> (optional, with KEYS[6]) poll-waiter id of a caller that
--            waits without the queue (the spin lock): a failed attempt
--            writes its entry in KEYS[6], its grant deletes it
-- ARGV[13] -> (with ARGV[12]) lifetime of that entry in ms
-- ARGV[14] -> (optional, with a token) the token of the waiter this one
--            followed in process (store/lock_follow.go): its first
--            queueing stands right behind that token while it is queued
--
-- Returns:
--   "OK"     -> (a string) taken: a new hold (count 1), a re-entry
--               (count + 1), or a hand-off to this token found already
--               done. Counted "a", with ARGV[11]'s wait when it is above 0
--               (a hand-off's wait was recorded when it was made). For the
--               hand-off found done, "OK <next>": next is the token first
--               in the queue ("" when none), as the hand-off's message
--               names it.
--   integer  -> another holder has it (or it was just handed to an earlier
--               waiter): its PTTL in ms, -1 when the key has no expiry.
--               Counted "r". A token is queued (or its entry refreshed).
--   error    -> "WRONGTYPE ...": KEYS[1] holds something other than a hash.
--               Counted as an error ("e"); nothing else changes.
local lock = KEYS[1]
local stats = KEYS[2]
local queue = KEYS[3]
local entries = KEYS[4]
local lease = ARGV[1]
local holder = ARGV[2]
local unlock_channel = ARGV[3]
local unlock_message = ARGV[4]
local wake_channel = ARGV[5]
local sharded = ARGV[6] == '1'
local token = ARGV[7] or ''
local held = KEYS[5]
local marks = held or entries -- where "=" names the token handed the lock
local waited = tonumber(ARGV[11] or '') or 0
local poll_id = ARGV[12] or ''
local polls = KEYS[6]
local follow_us = 3000 -- see place

-- A grant answers "OK" rather than Redisson's nil: a client library
-- treats a nil reply as an error (go-redis runs its whole error
-- classification on it), and a grant is the common case. It is a plain
-- string: redis.status_reply builds a table that Redis then converts,
-- about 0.35 µs more per call on redis-server 7.0.
local taken = 'OK'

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

--#include lib/stamp.lua

-- Hold times, beside the lock and expiring with it: a new hold records its
-- acquisition, a re-entry or confirmation its renewal.
local function hold_started(who, ms)
  if held then
    redis.call('HSET', held, who, stamp())
    redis.call('PEXPIRE', held, ms)
  end
end
local function hold_renewed(who, ms)
  if held then
    local v = redis.call('HGET', held, who)
    local since = v and string.match(v, '^(%d+) ') or '0'
    redis.call('HSET', held, who, since .. ' ' .. string.format('%d', now))
    redis.call('PEXPIRE', held, ms)
  end
end

--#include lib/record.lua
--#include lib/record_wait.lua
--#include lib/granted.lua

-- A caller that waits (a token) mostly finds the lock held: its PTTL is
-- read first, and a key that is absent needs neither the EXISTS below nor
-- an HEXISTS. Without a token the lock is mostly free: one EXISTS of the
-- lock and its queue finds that.
local pttl
if token ~= '' then
  pttl = redis.call('PTTL', lock)
end

-- Free, and no queue: nobody to pass over.
if pttl == -2 and redis.call('EXISTS', queue) == 0 or not pttl and redis.call('EXISTS', lock, queue) == 0 then
  redis.call('HSET', lock, holder, '1')
  redis.call('PEXPIRE', lock, lease)
  -- A release deletes the hold times with the lock and an expiry expires
  -- them together, so there is nothing older to clear here.
  hold_started(holder, lease)
  granted()
  return taken
end

local mine = 0
if pttl ~= -2 then
  mine = redis.pcall('HEXISTS', lock, holder)
end
if type(mine) == 'table' then
  record('e')
  return mine
end

if mine == 1 then
  if token ~= '' then
    redis.call('ZREM', queue, token)
    if ARGV[10] == '1' and redis.call('HGET', marks, '=') == token then
      -- The hand-off to this very token reached us before its message did:
      -- that level is ours already (counted when it was made). Our field
      -- alone proves nothing: another goroutine of the same holder may hold
      -- it while our entry expired, and that is a re-entry like any other.
      -- This attempt also sets the holder's own lease, in case the
      -- hand-off set only a short claim (replica acknowledgement).
      -- This is also how a waiter whose message was lost takes its hold:
      -- its next timed attempt (at most waitEntryTTL/3 later) lands here.
      -- The reply names the queue's head, as the hand-off's message
      -- would have: this holder may pass to it (store/lock_pass.go). The
      -- mark stays until the hold ends, so a pass re-sent after a lost
      -- reply still finds itself made.
      redis.call('PEXPIRE', lock, lease)
      hold_renewed(holder, lease)
      return 'OK ' .. (redis.call('ZRANGE', queue, '0', '0')[1] or '')
    end
    redis.call('HDEL', entries, token)
  end
  redis.call('HINCRBY', lock, holder, '1')
  redis.call('PEXPIRE', lock, lease)
  hold_renewed(holder, lease)
  granted()
  return taken
end

-- The first live waiter, dropping expired ones met on the way (at most 16
-- per call, so the script stays O(log N); the next call drops more).
local function live_head()
  for _ = 1, 16 do
    local first = redis.call('ZRANGE', queue, '0', '0', 'WITHSCORES')
    local head = first[1]
    if not head then
      return nil
    end
    local entry = redis.call('HGET', entries, head)
    if entry then
      local deadline, hlease, hholder = string.match(entry, '^(%d+) (%d+) (.*)$')
      if deadline and tonumber(deadline) >= now then
        return head, hlease, hholder, tonumber(first[2])
      end
    end
    redis.call('ZREM', queue, head)
    redis.call('HDEL', entries, head)
  end
  return nil
end

-- place scores a token queued for the first time. A token "<group>.<rest>"
-- goes right behind the newest entry of its group (a store Client: its
-- holder can pass the lock to it in process, store/lock_pass.go) among the
-- 32 newest entries scored less than follow_us before this arrival, else
-- at its arrival. A group's waiters then stand together, so most hand-offs
-- stay inside one Client, and nobody is passed by a waiter that arrived
-- follow_us or more after it. A refresh (ARGV[10]) keeps its score (NX).
local function place(arrival)
  local group = ARGV[10] ~= '1' and string.match(token, '^(%w+)%.')
  if not group then
    return arrival
  end
  -- A follower that queues itself (store/lock_follow.go) names the waiter
  -- it followed: while that one is queued, it stands right behind it.
  if (ARGV[14] or '') ~= '' then
    local led = redis.call('ZSCORE', queue, ARGV[14])
    if led then
      return tonumber(led) + 1
    end
  end
  -- %d: a concatenated number would print with 14 digits (about 50 µs off).
  local recent = redis.call('ZRANGE', queue, '+inf', string.format('(%d', arrival - follow_us),
    'BYSCORE', 'REV', 'LIMIT', '0', '32', 'WITHSCORES')
  for i = 1, #recent, 2 do
    if string.sub(recent[i], 1, #group + 1) == group .. '.' then
      return tonumber(recent[i + 1]) + 1
    end
  end
  return arrival
end

if not pttl then
  pttl = redis.call('PTTL', lock)
end
if pttl == -2 then
  local head, hlease, hholder, arrival = live_head()
  if not head or head == token then
    if head then
      redis.call('ZREM', queue, head)
      redis.call('HDEL', entries, head)
    end
    redis.call('HSET', lock, holder, '1')
    redis.call('PEXPIRE', lock, lease)
    hold_started(holder, lease)
    granted()
    return taken
  end
  -- Free, but an earlier waiter is queued (its release came from a client
  -- that does not hand off, or the lease ran out): it is theirs.
  redis.call('HSET', lock, hholder, '1')
  redis.call('PEXPIRE', lock, hlease)
  if held then
    redis.call('HSET', held, hholder, stamp(), '=', head)
    redis.call('PEXPIRE', held, hlease)
  else
    redis.call('HSET', entries, '=', head)
  end
  redis.call('ZREM', queue, head)
  redis.call('HDEL', entries, head)
  redis.call('PUBLISH', wake_channel, head)
  redis.call('PUBLISH', unlock_channel, unlock_message)
  if sharded then
    redis.call('SPUBLISH', unlock_channel, unlock_message)
  end
  record_wait(now - math.floor(arrival / 1000))
  pttl = tonumber(hlease)
end

if token ~= '' then
  local entry_ttl = tonumber(ARGV[8])
  redis.call('ZADD', queue, 'NX', string.format('%d', place(tonumber(t[1]) * 1000000 + tonumber(t[2]))), token)
  redis.call('HSET', entries, token, string.format('%d', now + entry_ttl) .. ' ' .. ARGV[9] .. ' ' .. holder)
  redis.call('PEXPIRE', queue, ARGV[8])
  redis.call('PEXPIRE', entries, ARGV[8])
end
if polls and poll_id ~= '' then
  local entry_ttl = tonumber(ARGV[13])
  redis.call('HSET', polls, poll_id, string.format('%d %d ', now - waited, now + entry_ttl) .. holder)
  redis.call('PEXPIRE', polls, ARGV[13])
end
record('r')
return pttl
