-- lock_acquire: take or re-enter a reentrant lock in Redisson's RLock
-- layout, queue the caller when it must wait, and count the attempt.
--
-- KEYS[1] -> lock (HASH): field "<client-uuid>:<owner>" -> reentry count
-- KEYS[2] -> stats of the lock (HASH), wire.StatsKey(name)
-- KEYS[3] -> waiter queue (ZSET), wire.LockQueueKey(name): token -> arrival
--            time in microseconds
-- KEYS[4] -> waiter entries (HASH), wire.LockEntriesKey(name): token ->
--            "<deadline ms> <lease ms> <holder>"
-- KEYS[5] -> (optional) poll waiters (HASH), wire.PollWaitersKey(name):
--            id -> "<since ms> <deadline ms> <holder>"
-- ARGV[1] -> lease in milliseconds (the lock's PEXPIRE)
-- ARGV[2] -> holder field "<client-uuid>:<owner>"
-- ARGV[3] -> "1" to SPUBLISH the unlock message of a hand-off as well,
--            else "0" (its channels are built from KEYS, lib/channels.lua)
-- ARGV[4] -> waiter token; absent or "" when the caller does not wait
--            (TryLock, or the first attempt of Lock), which is never queued
-- ARGV[5] -> (with a token) waiter entry lifetime in ms: an entry not
--            refreshed by a new attempt within it is dropped, so a dead
--            waiter never gets the lock
-- ARGV[6] -> (with a token) lease in ms to set when the lock is handed to
--            this waiter: its own lease, or with replica acknowledgement
--            a short claim it confirms (lock_renew, or its next attempt)
-- ARGV[7] -> (with a token) "1" when an earlier attempt of the same wait
--            queued this token
-- ARGV[8] -> (optional) ms the caller has waited so far, measured by its
--            client since the first attempt of this wait; "0" or absent
--            for a first attempt. A grant with a wait records it.
-- ARGV[9] -> (optional, with KEYS[5]) poll-waiter id of a caller that
--            waits without the queue (the spin lock): a failed attempt
--            writes its entry in KEYS[5], its grant deletes it
-- ARGV[10] -> (with ARGV[9]) lifetime of that entry in ms
-- ARGV[11] -> (optional, with a token) the token of the waiter this one
--            followed in process (store/lock_follow.go): its first
--            queueing stands right behind that token while it is queued
--
-- Returns:
--   "OK"     -> (a string) taken: a new hold (count 1, its hold record in
--               KEYS[1], wire.HoldField), a re-entry (count + 1, its
--               renewal recorded), or a hand-off to this token found already
--               done. Counted "a", with ARGV[8]'s wait when it is above 0
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
local polls = KEYS[5]
local lease = ARGV[1]
local holder = ARGV[2]
local sharded = ARGV[3] == '1'
local token = ARGV[4] or ''
local waited = tonumber(ARGV[8] or '') or 0
local poll_id = ARGV[9] or ''
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
--#include lib/held.lua
--#include lib/record.lua

-- Without a token the lock is mostly free: one EXISTS of the lock and its
-- queue says so, and nobody is passed over. The hold record rides in the
-- same HSET, and the lock's PEXPIRE covers it. A first attempt (nothing
-- waited, no poll-waiter entry left) is done here, before the helpers only
-- the other paths use: Lua makes a closure for each local function it
-- reaches, about 25 ns apiece on every call.
local free
if token == '' then
  free = redis.call('EXISTS', lock, queue) == 0
  if free and waited == 0 then
    redis.call('HSET', lock, holder, '1', hold_field(holder), stamp())
    redis.call('PEXPIRE', lock, lease)
    record('a')
    return taken
  end
end

--#include lib/renewed.lua
--#include lib/record_wait.lua
--#include lib/granted.lua
--#include lib/channels.lua
--#include lib/announce.lua
--#include lib/handed.lua

-- A caller that waits (a token) mostly finds the lock held: its PTTL is
-- read first, and a key that is absent needs no HMGET.
local pttl
if token ~= '' then
  pttl = redis.call('PTTL', lock)
  free = pttl == -2 and redis.call('EXISTS', queue) == 0
end
if free then
  redis.call('HSET', lock, holder, '1', hold_field(holder), stamp())
  redis.call('PEXPIRE', lock, lease)
  granted()
  return taken
end

-- The caller's field and hold record in one read.
local mine
if pttl ~= -2 then
  mine = redis.pcall('HMGET', lock, holder, hold_field(holder))
  if mine.err then
    record('e')
    return mine
  end
end

if mine and mine[1] then
  local own = mine[2]
  if token ~= '' then
    redis.call('ZREM', queue, token)
    if ARGV[7] == '1' and mark_of(own) == token then
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
      redis.call('HSET', lock, hold_field(holder), renewed(own))
      return 'OK ' .. (redis.call('ZRANGE', queue, '0', '0')[1] or '')
    end
    redis.call('HDEL', entries, token)
  end
  redis.call('HINCRBY', lock, holder, '1')
  redis.call('HSET', lock, hold_field(holder), renewed(own))
  redis.call('PEXPIRE', lock, lease)
  granted()
  return taken
end

-- The first live waiter, dropping expired ones met on the way (at most 16
-- per call, so the script stays O(log N); the next call drops more), and
-- whether another entry stands behind it.
local function live_head()
  for _ = 1, 16 do
    local first = redis.call('ZRANGE', queue, '0', '1', 'WITHSCORES')
    local head = first[1]
    if not head then
      return nil
    end
    local entry = redis.call('HGET', entries, head)
    if entry then
      local deadline, hlease, hholder = string.match(entry, '^(%d+) (%d+) (.*)$')
      if deadline and tonumber(deadline) >= now then
        return head, hlease, hholder, tonumber(first[2]), first[3] ~= nil
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
-- follow_us or more after it. A refresh (ARGV[7]) keeps its score (NX).
local function place(arrival)
  local group = ARGV[7] ~= '1' and string.match(token, '^(%w+)%.')
  if not group then
    return arrival
  end
  -- A follower that queues itself (store/lock_follow.go) names the waiter
  -- it followed: while that one is queued, it stands right behind it.
  if (ARGV[11] or '') ~= '' then
    local led = redis.call('ZSCORE', queue, ARGV[11])
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
-- Whether this script wrote the queued mark: a hand-off it made below, or
-- its own first queueing.
local marked = false
if pttl == -2 then
  local head, hlease, hholder, arrival, more = live_head()
  if not head or head == token then
    if head then
      redis.call('ZREM', queue, head)
      redis.call('HDEL', entries, head)
    end
    if more then
      redis.call('HSET', lock, holder, '1', hold_field(holder), stamp(), queued_field, '1')
    else
      redis.call('HSET', lock, holder, '1', hold_field(holder), stamp())
    end
    redis.call('PEXPIRE', lock, lease)
    granted()
    return taken
  end
  -- Free, but an earlier waiter is queued (its release came from a client
  -- that does not hand off, or the lease ran out): it is theirs, with the
  -- mark naming its token, and the queued mark when others stand behind
  -- it (this caller among them when it waits).
  marked = more or token ~= ''
  handed(hholder, head, marked, hlease)
  redis.call('ZREM', queue, head)
  redis.call('HDEL', entries, head)
  redis.call('PUBLISH', wake_channel(), head)
  announce(unlock_channel(), unlock_message)
  record_wait(now - math.floor(arrival / 1000))
  pttl = tonumber(hlease)
end

if token ~= '' then
  local entry_ttl = tonumber(ARGV[5])
  redis.call('ZADD', queue, 'NX', string.format('%d', place(tonumber(t[1]) * 1000000 + tonumber(t[2]))), token)
  redis.call('HSET', entries, token, string.format('%d', now + entry_ttl) .. ' ' .. ARGV[6] .. ' ' .. holder)
  redis.call('PEXPIRE', queue, ARGV[5])
  redis.call('PEXPIRE', entries, ARGV[5])
  -- The holder's release reads the mark to know it has a queue to serve.
  -- A hash made later by a hand-off or a grant carries it when waiters
  -- stand behind, so a waiter's first queueing is the one that writes it.
  if ARGV[7] ~= '1' and not marked then
    redis.call('HSET', lock, queued_field, '1')
  end
end
if polls and poll_id ~= '' then
  local entry_ttl = tonumber(ARGV[10])
  redis.call('HSET', polls, poll_id, string.format('%d %d ', now - waited, now + entry_ttl) .. holder)
  redis.call('PEXPIRE', polls, ARGV[10])
end
record('r')
return pttl
