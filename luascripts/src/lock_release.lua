-- lock_release: give back one level of a reentrant lock (Redisson RLock
-- layout); the last hands the lock to the longest-queued live waiter.
--
-- KEYS[1] -> lock (HASH): field "<client-uuid>:<owner>" -> reentry count
-- KEYS[2] -> stats of the lock (HASH), wire.StatsKey(name)
-- KEYS[3] -> waiter queue (ZSET): token -> arrival time in microseconds
-- KEYS[4] -> waiter entries (HASH): token -> "<deadline ms> <lease ms> <holder>"
-- KEYS[5] -> (optional) hold times (HASH), as in lock_acquire: deleted with
--            the lock, re-recorded for the waiter a hand-off picks with the
--            "=" mark naming its token (in KEYS[4] when KEYS[5] is absent)
-- ARGV[1] -> lease in milliseconds, re-armed while levels remain
-- ARGV[2] -> holder field "<client-uuid>:<owner>"
-- ARGV[3] -> unlock channel, wire.UnlockChannel(name)
-- ARGV[4] -> unlock message (Redisson's "0")
-- ARGV[5] -> hand-off channel of the lock
-- ARGV[6] -> "1" to SPUBLISH the unlock message as well as PUBLISH it,
--            else "0" (announce)
-- ARGV[7] -> absent or "" for a release; a waiter token to withdraw a waiter
--            that gave up: its entry is removed, and if the lock was already
--            handed to it, that hold is released like any other
-- ARGV[8] -> (optional) a local pass (store/lock_pass.go): the token of the
--            waiter this release must hand the lock to, whatever the queue
--            says; when the releaser no longer holds the lock, nothing
--            changes
-- ARGV[9] -> (with ARGV[8]) that waiter's holder field
-- ARGV[10] -> (with ARGV[8]) that waiter's lease in ms
-- ARGV[11] -> (with ARGV[8]) that waiter's wait in ms, measured by its
--            Client (the releaser's) since its first attempt, recorded as
--            the grant's wait
-- ARGV[12] -> (with ARGV[8]) "1" when that waiter follows a train
--            (store/lock_follow.go): it has no queue entry to remove
-- (ARGV[1..6] are lock_acquire's, so a handle sends the same list to both.)
--
-- Returns:
--   nil -> the caller does not hold the lock (absent, someone else's, or the
--          key is not a hash); nothing changed
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
--   {5, next} -> pass: handed to ARGV[8] as a hand-off is (counted, the
--          same messages); next as in 2
--   {6, next} -> pass already made (a re-sent pass whose reply was lost):
--          nothing changed
--   7   -> pass refused: the releaser does not hold the lock and the lock
--          is not the passed waiter's; nothing changed
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
local withdraw = ARGV[7] or ''
local pass = ARGV[8] or ''
local pass_holder = ARGV[9]
local pass_lease = ARGV[10]
local held = KEYS[5] -- optional: hold times, as in lock_acquire
local marks = held or entries -- where "=" names the token handed the lock
local now -- Redis time in ms, read only for a hand-off

--#include lib/stamp.lua
--#include lib/announce.lua
--#include lib/record.lua
--#include lib/record_wait.lua

if withdraw ~= '' then
  local handed = redis.call('HGET', marks, '=') == withdraw
  if handed then
    redis.call('HDEL', marks, '=')
  end
  redis.call('HDEL', entries, withdraw)
  if redis.call('ZREM', queue, withdraw) == 1 then
    return 3
  end
  if not handed then
    -- Its entry expired unserved: the holder's field, if present, is not a
    -- hand-off to this waiter.
    return 4
  end
end

local count = redis.pcall('HGET', lock, holder)
if pass ~= '' then
  -- More than one level: levels the releaser's handle does not count, from
  -- a re-entry Redis ran twice (its reply was lost and the call re-sent).
  -- A pass comes only from a handle whose holder field is its own alone,
  -- holding one level, so they are stale and go with the pass; refusing
  -- would leave them to a later re-entry of that handle while the waiter
  -- it let go on runs.
  if type(count) ~= 'string' or (tonumber(count) or 0) < 1 then
    if redis.call('HGET', marks, '=') == pass and redis.pcall('HEXISTS', lock, pass_holder) == 1 then
      return {6, redis.call('ZRANGE', queue, '0', '0')[1] or ''}
    end
    return 7
  end
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if ARGV[12] ~= '1' then
    redis.call('ZREM', queue, pass)
    redis.call('HDEL', entries, pass)
  end
  if held then
    redis.call('DEL', lock, held)
    redis.call('HSET', held, pass_holder, stamp(), '=', pass)
    redis.call('PEXPIRE', held, pass_lease)
  else
    redis.call('DEL', lock)
    redis.call('HSET', entries, '=', pass)
  end
  redis.call('HSET', lock, pass_holder, '1')
  redis.call('PEXPIRE', lock, pass_lease)
  local following = redis.call('ZRANGE', queue, '0', '0')[1] or ''
  redis.call('PUBLISH', wake_channel, pass .. ' ' .. following)
  announce(unlock_channel, unlock_message)
  -- The Client's own measure: the waiter's score can be up to
  -- lock_acquire's follow window earlier than its arrival.
  record_wait(tonumber(ARGV[11]) or 0)
  return {5, following}
end
if type(count) ~= 'string' then
  return nil -- no such field (false), or not a hash (an error table)
end
local n = tonumber(count)
if not n or n > 1 then
  -- HINCRBY refuses a count that is not an integer, as it always did.
  if redis.call('HINCRBY', lock, holder, '-1') > 0 then
    redis.call('PEXPIRE', lock, lease)
    if held then
      redis.call('PEXPIRE', held, lease)
    end
    return 0
  end
end
if held then
  redis.call('DEL', lock, held)
else
  redis.call('DEL', lock)
end

-- The longest-queued waiter whose entry is still fresh, dropping expired
-- ones met on the way (bounded; a later call drops more).
for _ = 1, 16 do
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
    redis.call('HSET', lock, hholder, '1')
    redis.call('PEXPIRE', lock, hlease)
    if held then
      redis.call('HSET', held, hholder, stamp(), '=', head)
      redis.call('PEXPIRE', held, hlease)
    else
      redis.call('HSET', entries, '=', head)
    end
    local following = redis.call('ZRANGE', queue, '0', '0')[1] or ''
    redis.call('PUBLISH', wake_channel, head .. ' ' .. following)
    announce(unlock_channel, unlock_message)
    -- The score is the waiter's arrival in Redis time (microseconds), or
    -- up to lock_acquire's follow window before it for a waiter placed
    -- behind its Client's; those are mostly passed to in process (with
    -- their own wait, above), so a hand-off mostly reaches a group's first.
    record_wait(now - math.floor(tonumber(popped[2]) / 1000))
    return 2
  end
  redis.call('HDEL', entries, head)
end

announce(unlock_channel, unlock_message)
return 1
