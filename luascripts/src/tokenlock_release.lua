-- tokenlock_release: compare-and-delete release of a token lock.
-- Used by the holder and by the console's force-unlock alike: in both the
-- lock is deleted only while it still holds the token the caller knows, so
-- a lock that expired and was taken by someone else is never broken.
--
-- KEYS[1] -> the lock (STRING): the holder's token
-- KEYS[2] -> (optional) hold times (HASH), store.HeldKey(name): deleted with
--            the lock (one holder at a time, so the whole hash goes)
-- ARGV[1] -> the token expected
-- ARGV[2] -> (optional) channel, store.TokenLockChannel(name): "0" is
--            published there after a delete, waking lockwarden's waiters
--
-- Returns:
--    1 -> deleted
--    0 -> no such key
--   -1 -> the key holds another token; nothing changed
--   -2 -> the key is not a string; nothing changed
-- Other clients of this layout (redsync, redislock) listen to nothing: they
-- poll, and find the key gone on their next attempt.
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
