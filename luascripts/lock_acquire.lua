-- lock_acquire: take or re-enter a reentrant lock in Redisson's RLock layout,
-- and count the attempt in the lock's stats ring, in one atomic step so the
-- console's numbers never disagree with what the lock did.
--
-- KEYS[1] -> lock (HASH): field "<client-uuid>:<owner>" -> reentry count
-- KEYS[2] -> stats ring of the lock (HASH), store.StatsKey(name)
-- ARGV[1] -> lease in milliseconds (the lock's PEXPIRE)
-- ARGV[2] -> holder field "<client-uuid>:<owner>"
--
-- Returns:
--   nil      -> taken: a new hold (count 1) or a re-entry (count + 1); the
--               lease restarts either way. Counted as acquired ("a").
--   integer  -> another holder has it: its remaining PTTL in ms, -1 when the
--               key has no expiry. Counted as rejected ("r").
--   error    -> "WRONGTYPE ...": KEYS[1] holds something other than a hash.
--               Counted as an error ("e"); nothing else changes.
local lock = KEYS[1]
local stats = KEYS[2]
local lease = ARGV[1]
local holder = ARGV[2]

-- Same ring layout in every script that records outcomes (store/model.go):
-- 16 slots of 200 ms buckets, a slot is reset when it still holds an older
-- bucket, and the hash dies 5 s after the last write.
local function record(outcome)
  local t = redis.call('TIME')
  local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local bucket = math.floor(now_ms / 200)
  local s = bucket % 16
  local b = string.format('%d', bucket)
  if redis.call('HGET', stats, 'b' .. s) ~= b then
    redis.call('HSET', stats, 'b' .. s, b, 'a' .. s, 0, 'r' .. s, 0, 'e' .. s, 0)
  end
  redis.call('HINCRBY', stats, outcome .. s, 1)
  redis.call('PEXPIRE', stats, 5000)
end

local kind = redis.call('TYPE', lock)['ok']
if kind ~= 'none' and kind ~= 'hash' then
  record('e')
  return redis.error_reply('WRONGTYPE lock key holds a ' .. kind .. ', not a hash')
end

if kind == 'none' or redis.call('HEXISTS', lock, holder) == 1 then
  redis.call('HINCRBY', lock, holder, 1)
  redis.call('PEXPIRE', lock, lease)
  record('a')
  return nil
end

record('r')
return redis.call('PTTL', lock)
