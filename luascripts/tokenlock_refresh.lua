-- tokenlock_refresh: extend a token lock's lease while the caller still
-- holds it (compare-and-pexpire), so a lost lock is never resurrected.
--
-- KEYS[1] -> the lock (STRING): the holder's token
-- ARGV[1] -> the token expected
-- ARGV[2] -> new lease in milliseconds
--
-- Returns 1 when extended, 0 when the caller does not hold the lock.
local lock = KEYS[1]
local token = ARGV[1]
local lease = ARGV[2]

if redis.call('TYPE', lock)['ok'] ~= 'string' or redis.call('GET', lock) ~= token then
  return 0
end
redis.call('PEXPIRE', lock, lease)
return 1
