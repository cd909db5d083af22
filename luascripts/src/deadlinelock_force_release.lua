-- deadlinelock_force_release: the console breaks a deadline lock (a
-- timestamp lock: SETNX of a deadline in epoch ms, taken over with GETSET
-- once the deadline has passed). The value the admin saw identifies the
-- holder: if a client took the lock over meanwhile, its new deadline is
-- another value and the lock is left alone. Such locks have no channel, so
-- nothing is published; waiters find the key gone on their next SETNX.
--
-- KEYS[1] -> the lock (STRING): the holder's deadline, epoch ms
-- KEYS[2] -> (optional) hold times (HASH), store.HeldKey(name): lockwarden
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
