-- rwlock_renew: the watchdog's lease extension for one owner of a Redisson
-- RReadWriteLock, only while one of the owner's fields is present.
--
-- KEYS[1]   -> lock (HASH): its expiry is raised, never lowered (other
--              readers may hold longer leases)
-- KEYS[2]   -> hold times (HASH), wire.HeldKey(name): "renewed" of each
--              side the owner holds moves to now ("0 <now>" when no
--              acquisition was kept)
-- KEYS[3..] -> the owner's read level keys, wire.RWReadLevelKey for
--              1..ARGV[4]
-- ARGV[1] -> lease in milliseconds
-- ARGV[2] -> read field "<uuid>:<owner>"
-- ARGV[3] -> write field "<uuid>:<owner>:write"
-- ARGV[4] -> the caller's idea of the owner's read count
--
-- Returns:
--   1       -> renewed
--   0       -> the owner holds neither side (or the key is not a hash); the
--              watchdog should stop
--   {count} -> ARGV[4] was wrong: the real read count; nothing changed
local lock = KEYS[1]
local lease = tonumber(ARGV[1])
local read_field = ARGV[2]
local write_field = ARGV[3]
local held = KEYS[2]

local mode = redis.pcall('HGET', lock, 'mode')
if type(mode) ~= 'string' then
  return 0
end
local count = tonumber(redis.call('HGET', lock, read_field)) or 0
local writes = redis.call('HEXISTS', lock, write_field) == 1
if count == 0 and not writes then
  return 0
end
if count ~= tonumber(ARGV[4]) then
  return {count}
end
for i = 3, #KEYS do
  redis.call('PEXPIRE', KEYS[i], lease)
end
if redis.call('PTTL', lock) < lease then
  redis.call('PEXPIRE', lock, lease)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function renewed(field)
  local v = redis.call('HGET', held, field)
  local since = v and string.match(v, '^(%d+) ') or '0'
  redis.call('HSET', held, field, since .. ' ' .. now)
end
if count > 0 then
  renewed(read_field)
end
if writes then
  renewed(write_field)
end
if redis.call('PTTL', held) < lease then
  redis.call('PEXPIRE', held, lease)
end
return 1
