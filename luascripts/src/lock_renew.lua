-- lock_renew: the watchdog's lease extension, only while the caller's
-- holder field is present, so a lost lock is never resurrected.
--
-- KEYS[1] -> lock (HASH): field "<client-uuid>:<owner>" -> reentry count
-- KEYS[2] -> (optional) hold times (HASH), as in lock_acquire: the
--            holder's renewal time is recorded ("0 <now>" when its
--            acquisition was not)
-- ARGV[1] -> lease in milliseconds
-- ARGV[2] -> holder field "<client-uuid>:<owner>"
--
-- Returns:
--   1 -> renewed: PEXPIRE lease
--   0 -> the caller does not hold the lock (or the key is not a hash, whose
--        WRONGTYPE error is caught); the watchdog should stop
local lock = KEYS[1]
local lease = ARGV[1]
local holder = ARGV[2]

if redis.pcall('HEXISTS', lock, holder) ~= 1 then
  return 0
end
redis.call('PEXPIRE', lock, lease)
local held = KEYS[2]
if held then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local v = redis.call('HGET', held, holder)
  local since = v and string.match(v, '^(%d+) ') or '0'
  redis.call('HSET', held, holder, since .. ' ' .. string.format('%d', now))
  redis.call('PEXPIRE', held, lease)
end
return 1
