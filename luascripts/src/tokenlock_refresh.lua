-- tokenlock_refresh: extend a token lock's lease while the caller still
-- holds it (compare-and-pexpire), so a lost lock is never resurrected.
--
-- KEYS[1] -> the lock (STRING): the holder's token
-- KEYS[2] -> (optional) hold times (HASH), wire.HeldKey(name): the token's
--            "renewed" moves to now ("0 <now>" when no acquisition was kept)
-- KEYS[3] -> (optional) stats of the lock (HASH), wire.StatsKey(name): a
--            refresh of a lock no longer the caller's is recorded there as
--            a late renewal (lib/late.lua)
-- ARGV[1] -> the token expected
-- ARGV[2] -> new lease in milliseconds
--
-- Returns 1 when extended, 0 when the caller does not hold the lock.
local lock = KEYS[1]
local token = ARGV[1]
local lease = ARGV[2]
local held = KEYS[2]
local stats = KEYS[3]

local kind = redis.call('TYPE', lock)['ok']
local current = kind == 'string' and redis.call('GET', lock)
if current ~= token then
  if not stats or (kind ~= 'string' and kind ~= 'none') then
    return 0
  end

--#include lib/late.lua

  local since = '0'
  if current and held then
    since = string.match(redis.call('HGET', held, current) or '', '^(%d+) ') or '0'
  end
  late('renew', token, current or '', since)
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
