-- rwlock_renew: the watchdog's lease extension for one owner of a Redisson
-- RReadWriteLock (layout in rwlock_read_acquire.lua): the lock and every
-- read level key of the owner. It never resurrects or extends what the
-- owner lost, so it only acts while one of the owner's fields is present,
-- and it raises the lock's expiry but never lowers it (other readers may
-- hold longer leases).
--
-- KEYS[1]   -> lock (HASH)
-- KEYS[2..] -> the owner's read level keys, "...:rwlock_timeout:<1..n>"
--              where n is ARGV[4]
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

local mode = redis.pcall('HGET', lock, 'mode')
if type(mode) ~= 'string' then
  return 0
end
local count = tonumber(redis.call('HGET', lock, read_field)) or 0
if count == 0 and redis.call('HEXISTS', lock, write_field) == 0 then
  return 0
end
if count ~= tonumber(ARGV[4]) then
  return {count}
end
for i = 2, #KEYS do
  redis.call('PEXPIRE', KEYS[i], lease)
end
if redis.call('PTTL', lock) < lease then
  redis.call('PEXPIRE', lock, lease)
end
return 1
