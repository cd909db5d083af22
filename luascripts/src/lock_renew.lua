-- lock_renew: the watchdog's lease extension, only while the caller's
-- holder field is present, so a lost lock is never resurrected.
--
-- KEYS[1] -> lock (HASH): field "<client-uuid>:<owner>" -> reentry count,
--            and the holder's hold record (wire.HoldField)
-- KEYS[2] -> (optional) stats of the lock (HASH), wire.StatsKey(name):
--            a refused renewal is recorded there as a late one
--            (lib/late.lua)
-- ARGV[1] -> lease in milliseconds
-- ARGV[2] -> holder field "<client-uuid>:<owner>"
-- ARGV[3] -> (optional) "1" to record the renewal in the hold record
--            ("0 <now>" when it had none); absent when the grant being
--            confirmed recorded it a moment ago
--
-- Returns:
--   1 -> renewed: PEXPIRE lease
--   0 -> the caller does not hold the lock (or the key is not a hash, whose
--        WRONGTYPE error is caught); the watchdog should stop. With
--        KEYS[2] the renewal of a hash or a missing key is recorded late
local lock = KEYS[1]
local lease = ARGV[1]
local holder = ARGV[2]
local stats = KEYS[2]
local now -- Redis time in ms, read only to record the renewal

--#include lib/renewed.lua

local got = redis.pcall('HMGET', lock, holder, hold_field(holder))
if not got.err and got[1] then
  redis.call('PEXPIRE', lock, lease)
  if ARGV[3] == '1' then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    redis.call('HSET', lock, hold_field(holder), renewed(got[2]))
  end
  return 1
end
if got.err or not stats then
  return 0
end

--#include lib/late.lua

late('renew', holder, next_holder(redis.call('HGETALL', lock)))
return 0
