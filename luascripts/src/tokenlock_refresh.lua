-- tokenlock_refresh: extend a token lock's lease while the caller still
-- holds it (compare-and-pexpire), so a lost lock is never resurrected.
--
-- KEYS[1] -> the lock (STRING): the holder's token
-- KEYS[2] -> (optional) hold times (HASH), wire.HeldKey(name): the token's
--            "renewed" moves to now ("0 <now>" when no acquisition was kept)
-- ARGV[1] -> the token expected
-- ARGV[2] -> new lease in milliseconds
--
-- Returns 1 when extended, 0 when the caller does not hold the lock.
local lock = KEYS[1]
local token = ARGV[1]
local lease = ARGV[2]
local held = KEYS[2]

if redis.call('TYPE', lock)['ok'] ~= 'string' or redis.call('GET', lock) ~= token then
  return 0
end
redis.call('PEXPIRE', lock, lease)
if held then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local v = redis.call('HGET', held, token)
  local since = v and string.match(v, '^(%d+) ') or '0'
  redis.call('HSET', held, token, since .. ' ' .. now)
  redis.call('PEXPIRE', held, lease)
end
return 1
