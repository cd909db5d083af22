-- auth_session_touch: check a session on use and extend it, or delete it
-- when it timed out, its token was rotated or its role's index dropped it.
--
-- KEYS[1]    -> the session (HASH: role, fp, created, seen; times in Redis
--               ms; ix = 1 when its role's index lists it)
-- KEYS[2..]  -> the sessions (ZSET: id -> created, µs) of the role of each
--               pair in ARGV[4..], in the same order
-- ARGV[1]    -> idle timeout (ms)
-- ARGV[2]    -> maximum age (ms)
-- ARGV[3]    -> the session id (its member in the index)
-- ARGV[4..]  -> pairs of role, keyed fingerprint of that role's token now
--
-- Returns:
--   {role, created} -> the session is valid; seen is now and its TTL renewed
--   -1 -> no such session, or it timed out (deleted)
--   -2 -> its token is no longer that role's (deleted)
--   -3 -> its role's index no longer holds it (deleted)
local session = KEYS[1]
local idle, maxage = tonumber(ARGV[1]), tonumber(ARGV[2])
local id = ARGV[3]

local v = redis.call('HMGET', session, 'role', 'fp', 'created', 'seen', 'ix')
local role, fp, created, seen, ix = v[1], v[2], tonumber(v[3]), tonumber(v[4]), v[5]
if not role then
  return -1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not created or not seen or now - created >= maxage or now - seen >= idle then
  redis.call('DEL', session)
  return -1
end
local index = nil
for i = 4, #ARGV - 1, 2 do
  if ARGV[i] == role and ARGV[i + 1] == fp then
    index = KEYS[2 + (i - 4) / 2]
  end
end
if not index then
  redis.call('DEL', session)
  return -2
end
if ix and not redis.call('ZSCORE', index, id) then
  redis.call('DEL', session)
  return -3
end
redis.call('HSET', session, 'seen', now)
redis.call('PEXPIRE', session, math.min(idle, created + maxage - now))
return {role, created}
