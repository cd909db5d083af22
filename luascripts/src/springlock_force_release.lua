-- springlock_force_release: the console breaks a Spring Integration
-- RedisLockRegistry lock and publishes the unlock as the registry does.
--
-- KEYS[1] -> the lock (STRING), "<registryKey>:<lockKey>": the client's id
-- ARGV[1] -> the client id the admin saw
-- ARGV[2] -> the unlock channel, "<registryKey>-channel:<lock>"; the
--            message is the lock's key, which wakes the registry's waiters
--
-- Returns:
--    1 -> deleted and published
--    0 -> no such key
--   -1 -> the key holds another client's id; nothing changed
--   -2 -> the key is not a string; nothing changed
--#include lib/of_type.lua
local lock = KEYS[1]
local client = ARGV[1]
local channel = ARGV[2]

local wrong = of_type(lock, 'string')
if wrong then
  return wrong
end
if redis.call('GET', lock) ~= client then
  return -1
end
redis.call('UNLINK', lock)
redis.call('PUBLISH', channel, lock)
return 1
