-- tokenlock_release: compare-and-delete release of a token lock, by its
-- holder or by the console's force-unlock.
--
-- KEYS[1] -> the lock (STRING): the holder's token
-- KEYS[2] -> (optional) hold times (HASH), wire.HeldKey(name): deleted with
--            the lock (one holder at a time, so the whole hash goes)
-- KEYS[3] -> (optional) stats of the lock (HASH), wire.StatsKey(name): the
--            holder's release of a lock no longer its own (0, -1) is
--            recorded there as a late one (lib/late.lua); the console's
--            force-unlock leaves it out
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
local stats = KEYS[3]

local kind = redis.call('TYPE', lock)['ok']
if kind ~= 'none' and kind ~= 'string' then
  return -2
end
local current = kind == 'string' and redis.call('GET', lock)
if current == token then
  if held then
    redis.call('DEL', lock, held)
  else
    redis.call('DEL', lock)
  end
  if channel then
    redis.call('PUBLISH', channel, '0')
  end
  return 1
end
if not stats then
  return current and -1 or 0
end

--#include lib/late.lua

local since = '0'
if current and held then
  since = string.match(redis.call('HGET', held, current) or '', '^(%d+) ') or '0'
end
late('release', token, current or '', since)
return current and -1 or 0
