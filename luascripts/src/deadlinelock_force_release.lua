-- deadlinelock_force_release: the console breaks a deadline lock (SETNX of
-- a deadline, taken over with GETSET) if it still holds the value seen.
--
-- KEYS[1] -> the lock (STRING): the holder's deadline, epoch ms
-- KEYS[2] -> (optional) hold times (HASH), wire.HeldKey(name): lockwarden
--            records none for this kind, but any record there is deleted
--            with the lock so it cannot outlive it
-- ARGV[1] -> the value the admin saw
--
-- Returns:
--    1 -> deleted
--    0 -> no such key
--   -1 -> the key holds another value; nothing changed
--   -2 -> the key is not a string; nothing changed
local lock = KEYS[1]
local seen = ARGV[1]
local held = KEYS[2]

local kind = redis.call('TYPE', lock)['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'string' then
  return -2
end
if redis.call('GET', lock) ~= seen then
  return -1
end
redis.call('DEL', lock)
if held then
  redis.call('DEL', held)
end
return 1
