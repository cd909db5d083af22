-- lock_release: give back one level of a reentrant lock (Redisson RLock
-- layout); the last hands the lock to the longest-queued live waiter.
--
-- KEYS[1] -> lock (HASH): field "<client-uuid>:<owner>" -> reentry count,
--            and lockwarden's hold record and queued mark (wire.HoldField)
-- KEYS[2] -> stats of the lock (HASH), wire.StatsKey(name)
-- KEYS[3] -> waiter queue (ZSET): token -> arrival time in microseconds
-- KEYS[4] -> waiter entries (HASH): token -> "<deadline ms> <lease ms> <holder>"
-- ARGV[1] -> holder field "<client-uuid>:<owner>"
-- ARGV[2] -> what to do; absent or "": release one level (Redisson's
--            unlock). "last": release the caller's last level without
--            reading its count: the caller is the only handle on its
--            holder field and counts one level, so levels Redis holds
--            beyond it (a re-entry whose reply was lost) go too.
--            "withdraw": take out a waiter that gave up (ARGV[5]); if the
--            lock was already handed to it, that hold is released like any
--            other. "pass": a local pass (store/lock_pass.go) to ARGV[5],
--            whatever the queue says; when the releaser no longer holds
--            the lock, nothing changes
-- ARGV[3] -> "1" to SPUBLISH the unlock message as well as PUBLISH it,
--            else "0" (announce; the channels are built from KEYS,
--            lib/channels.lua)
-- ARGV[4] -> (release of one level, withdraw) lease in milliseconds,
--            re-armed while levels remain
-- ARGV[5] -> (withdraw, pass) the waiter's token
-- ARGV[6] -> (pass) that waiter's holder field
-- ARGV[7] -> (pass) that waiter's lease in ms
-- ARGV[8] -> (pass) that waiter's wait in ms, measured by its Client (the
--            releaser's) since its first attempt, recorded as the grant's
--            wait
-- ARGV[9] -> (pass) "1" when that waiter follows a train
--            (store/lock_follow.go): it has no queue entry to remove
--
-- Returns:
--   nil -> the caller does not hold the lock (absent, someone else's, or the
--          key is not a hash); nothing changed but, for a hash or no key,
--          the late release recorded (lib/late.lua: its stats field and
--          lease channel)
--   0   -> one level released, still held; lease restarted
--   1   -> released: key deleted, message published
--   2   -> released and handed to the next waiter (counted "a", its wait
--          since it queued recorded), messages published. The hand-off's
--          message is "<token> <next>", next being the token then first
--          in the queue ("" when none): the new holder's Client can pass
--          the lock on in process when that waiter is its own
--   3   -> withdraw: the token was still queued and is removed; nothing else
--   4   -> withdraw: the token was neither queued nor handed the lock (its
--          entry expired); nothing else
--   {5, next} -> pass: handed to ARGV[5] as a hand-off is (counted, the
--          same messages); next as in 2
--   {6, next} -> pass already made (a re-sent pass whose reply was lost):
--          nothing changed
--   7   -> pass refused: the releaser does not hold the lock and the lock
--          is not the passed waiter's; nothing changed but the late release
--          recorded, as for nil
local lock = KEYS[1]
local stats = KEYS[2]
local queue = KEYS[3]
local entries = KEYS[4]
local holder = ARGV[1]
local op = ARGV[2] or ''
local sharded = ARGV[3] == '1'
local lease = ARGV[4]
local now -- Redis time in ms, read only for a hand-off

--#include lib/held.lua
--#include lib/channels.lua
--#include lib/announce.lua

-- The last level of a handle alone on its holder field, the common
-- release, comes before the helpers only the others use (each local
-- function Lua reaches costs a closure). The holder field, its hold record
-- and the queued mark are all the hash holds while this holder has it, so
-- one HDEL releases the lock and its count tells what was there: 2 or 3
-- fields, this holder's (3: with waiters queued); 1, another holder's
-- queued mark, which goes back; 0, not held by this holder.
local queued, refused
if op == 'last' then
  local gone = redis.pcall('HDEL', lock, holder, hold_field(holder), queued_field)
  if type(gone) ~= 'number' then
    return nil
  end
  if gone == 0 then
    refused = true
  elseif gone == 1 and redis.call('EXISTS', lock) == 1 then
    -- The hash is still there: another holder's, whose queued mark the
    -- HDEL took. (A 1 whose hash is gone was this holder's field alone, a
    -- hold taken without a record: released below.)
    redis.call('HSET', lock, queued_field, '1')
    refused = true
  elseif gone < 3 then
    announce(unlock_channel(), unlock_message)
    return 1
  else
    queued = true
  end
end

--#include lib/stamp.lua
--#include lib/renewed.lua
--#include lib/record.lua
--#include lib/record_wait.lua
--#include lib/handed.lua
--#include lib/late.lua

-- A release of a hold that already ended (its lease ran out, a
-- force-unlock): the holder worked past its lease, which the console
-- must hear of.
local function refuse()
  late('release', holder, next_holder(redis.call('HGETALL', lock)))
  return nil
end
if refused then
  return refuse()
end

if op == 'withdraw' then
  local token = ARGV[5]
  local own = redis.pcall('HGET', lock, hold_field(holder))
  local was_handed = type(own) == 'string' and mark_of(own) == token
  if was_handed then
    -- The mark names the token only while it may still find its hold.
    redis.call('HSET', lock, hold_field(holder), string.match(own, '^%d+ %d+'))
  end
  redis.call('HDEL', entries, token)
  if redis.call('ZREM', queue, token) == 1 then
    return 3
  end
  if not was_handed then
    -- Its entry expired unserved: the holder's field, if present, is not a
    -- hand-off to this waiter.
    return 4
  end
end

if op == 'pass' then
  local pass, pass_holder, pass_lease = ARGV[5], ARGV[6], ARGV[7]
  -- More than one level: levels the releaser's handle does not count, from
  -- a re-entry Redis ran twice (its reply was lost and the call re-sent).
  -- A pass comes only from a handle whose holder field is its own alone,
  -- holding one level, so they are stale and go with the pass; refusing
  -- would leave them to a later re-entry of that handle while the waiter
  -- it let go on runs.
  local count = redis.pcall('HGET', lock, holder)
  if type(count) ~= 'string' or (tonumber(count) or 0) < 1 then
    local theirs = redis.pcall('HMGET', lock, pass_holder, hold_field(pass_holder))
    if not theirs.err and theirs[1] and mark_of(theirs[2]) == pass then
      return {6, redis.call('ZRANGE', queue, '0', '0')[1] or ''}
    end
    if not theirs.err then
      refuse()
    end
    return 7
  end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if ARGV[9] ~= '1' then
    redis.call('ZREM', queue, pass)
    redis.call('HDEL', entries, pass)
  end
  redis.call('DEL', lock)
  local following = redis.call('ZRANGE', queue, '0', '0')[1] or ''
  handed(pass_holder, pass, following ~= '', pass_lease)
  redis.call('PUBLISH', wake_channel(), pass .. ' ' .. following)
  announce(unlock_channel(), unlock_message)
  -- The Client's own measure: the waiter's score can be up to
  -- lock_acquire's follow window earlier than its arrival.
  record_wait(tonumber(ARGV[8]) or 0)
  return {5, following}
end

if op ~= 'last' then
  local got = redis.pcall('HMGET', lock, holder, queued_field)
  if got.err then
    return nil -- not a hash
  end
  if not got[1] then
    return refuse()
  end
  local n = tonumber(got[1])
  if not n or n > 1 then
    -- HINCRBY refuses a count that is not an integer, as it always did.
    if redis.call('HINCRBY', lock, holder, '-1') > 0 then
      redis.call('PEXPIRE', lock, lease)
      return 0
    end
  end
  redis.call('DEL', lock)
  queued = got[2]
end

-- Nobody queued by the mark: the release is done. Else the
-- longest-queued waiter whose entry is still fresh, dropping expired ones
-- met on the way (bounded; a later call drops more).
for _ = 1, queued and 16 or 0 do
  local popped = redis.call('ZPOPMIN', queue)
  local head = popped[1]
  if not head then
    break
  end
  if not now then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  local entry = redis.call('HGET', entries, head)
  local deadline, hlease, hholder
  if entry then
    deadline, hlease, hholder = string.match(entry, '^(%d+) (%d+) (.*)$')
  end
  if deadline and tonumber(deadline) >= now then
    -- One mark names the token handed the lock, so handed waiters leave
    -- no entry behind.
    redis.call('HDEL', entries, head)
    local following = redis.call('ZRANGE', queue, '0', '0')[1] or ''
    handed(hholder, head, following ~= '', hlease)
    redis.call('PUBLISH', wake_channel(), head .. ' ' .. following)
    announce(unlock_channel(), unlock_message)
    -- The score is the waiter's arrival in Redis time (microseconds), or
    -- up to lock_acquire's follow window before it for a waiter placed
    -- behind its Client's; those are mostly passed to in process (with
    -- their own wait, above), so a hand-off mostly reaches a group's first.
    record_wait(now - math.floor(tonumber(popped[2]) / 1000))
    return 2
  end
  redis.call('HDEL', entries, head)
end

announce(unlock_channel(), unlock_message)
return 1
