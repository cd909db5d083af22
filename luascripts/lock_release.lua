-- lock_release: give back one level of a reentrant lock (Redisson RLock
-- layout). The last level deletes the hash and tells waiters on the unlock
-- channel, so they retry at once instead of sleeping out the lease. The
-- channel travels in ARGV because it is not a key (Cluster would reject it as
-- CROSSSLOT).
--
-- KEYS[1] -> lock (HASH): field "<client-uuid>:<owner>" -> reentry count
-- ARGV[1] -> lease in milliseconds, re-armed while levels remain
-- ARGV[2] -> holder field "<client-uuid>:<owner>"
-- ARGV[3] -> unlock channel, store.UnlockChannel(name)
-- ARGV[4] -> unlock message (Redisson's "0")
--
-- Returns:
--   nil -> the caller does not hold the lock (absent, someone else's, or the
--          key is not a hash); nothing changed
--   0   -> one level released, still held; lease restarted
--   1   -> released: key deleted, message published
local lock = KEYS[1]
local lease = ARGV[1]
local holder = ARGV[2]
local channel = ARGV[3]
local message = ARGV[4]

if redis.call('TYPE', lock)['ok'] ~= 'hash' then
  return nil
end
if redis.call('HEXISTS', lock, holder) == 0 then
  return nil
end

local count = redis.call('HINCRBY', lock, holder, -1)
if count > 0 then
  redis.call('PEXPIRE', lock, lease)
  return 0
end

redis.call('DEL', lock)
redis.call('PUBLISH', channel, message)
return 1
