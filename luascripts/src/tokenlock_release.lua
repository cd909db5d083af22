-- tokenlock_release: compare-and-delete release of a token lock, by its
-- holder or by the console's force-unlock.
--
-- KEYS[1] -> the lock (STRING): the holder's token
-- KEYS[2] -> (optional) hold times (HASH), wire.HeldKey(name): deleted with
--            the lock (one holder at a time, so the whole hash goes)
-- ARGV[1] -> the token expected
-- ARGV[2] -> (optional) channel, wire.TokenLockChannel(name): "0" is
--            published there after a delete, waking lockwarden's waiters
--
-- Returns:
--    1 -> deleted
--    0 -> no such key
--   -1 -> the key holds another token; nothing changed
--   -2 -> the key is not a string; nothing changed
local lock = KEYS[1]
local token = ARGV[1]
local held = KEYS[2]
local channel = ARGV[2]

local kind = redis.call('TYPE', lock)['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'string' then
  return -2
end
if redis.call('GET', lock) ~= token then
  return -1
end
if held then
  redis.call('DEL', lock, held)
else
  redis.call('DEL', lock)
end
if channel then
  redis.call('PUBLISH', channel, '0')
end
return 1
