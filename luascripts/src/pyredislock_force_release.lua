-- pyredislock_force_release: the console breaks a python-redis-lock lock the
-- way its release does, so the clients blocked on its signal list wake.
--
-- KEYS[1] -> the lock (STRING), "lock:<name>": the holder's id
-- KEYS[2] -> the signal list (LIST), "lock-signal:<name>": its waiters BLPOP it
-- ARGV[1] -> the id the admin saw
-- ARGV[2] -> the signal list's expiry in ms (python-redis-lock's signal_expire)
--
-- Returns:
--    1 -> deleted, one signal pushed
--    0 -> no such key
--   -1 -> the key holds another id; nothing changed
--   -2 -> the key is not a string; nothing changed
--#include lib/of_type.lua
local lock = KEYS[1]
local signal = KEYS[2]
local id = ARGV[1]
local signal_ms = ARGV[2]

local wrong = of_type(lock, 'string')
if wrong then
  return wrong
end
if redis.call('GET', lock) ~= id then
  return -1
end
redis.call('DEL', signal)
redis.call('LPUSH', signal, '1')
redis.call('PEXPIRE', signal, signal_ms)
redis.call('DEL', lock)
return 1
