-- lock_renew: the watchdog's lease extension. It must never resurrect or
-- extend a lock the caller lost (expired, force-unlocked, taken by another),
-- so it only touches the key while the caller's holder field is present.
--
-- KEYS[1] -> lock (HASH): field "<client-uuid>:<owner>" -> reentry count
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
return 1
