-- lock_force_release: the console breaks a stuck reentrant lock if the
-- holder the admin saw still has it, and tells waiters as a release does.
--
-- KEYS[1] -> lock (HASH): field "<client-uuid>:<owner>" -> reentry count,
--            and lockwarden's hold record (wire.HoldField), deleted with it
-- ARGV[1] -> unlock channel, wire.UnlockChannel(name)
-- ARGV[2] -> unlock message (Redisson's "0")
-- ARGV[3] -> holder field the admin saw, "<client-uuid>:<owner>"
-- ARGV[4] -> "1" to SPUBLISH as well as PUBLISH, else "0" (announce)
--
-- Returns:
--    1 -> released: key deleted (all reentry levels), message published
--    0 -> no such key; nothing changed
--   -1 -> the key is a hash without that holder field (held by someone
--         else now); nothing changed
--   -2 -> the key is not a hash; nothing changed
local lock = KEYS[1]
local channel = ARGV[1]
local message = ARGV[2]
local holder = ARGV[3]
local sharded = ARGV[4] == '1'

--#include lib/announce.lua

local kind = redis.call('TYPE', lock)['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'hash' then
  return -2
end
if redis.call('HEXISTS', lock, holder) == 0 then
  return -1
end
redis.call('DEL', lock)
announce(channel, message)
return 1
