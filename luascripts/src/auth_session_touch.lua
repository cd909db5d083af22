-- auth_session_touch: check a session on use and extend it, or delete it
-- when it timed out or its token is no longer configured for its role.
--
-- KEYS[1]    -> the session (HASH: role, fp, created, seen; times in Redis ms)
-- ARGV[1]    -> idle timeout (ms)
-- ARGV[2]    -> maximum age (ms)
-- ARGV[3..]  -> pairs of role, keyed fingerprint of that role's token now
--
-- Returns:
--   {role, created} -> the session is valid; seen is now and its TTL renewed
--   -1 -> no such session, or it timed out: past its idle timeout or
--         maximum age (deleted)
--   -2 -> its token is no longer that role's: it was rotated (deleted)
local session = KEYS[1]
local idle, maxage = tonumber(ARGV[1]), tonumber(ARGV[2])

local v = redis.call('HMGET', session, 'role', 'fp', 'created', 'seen')
local role, fp, created, seen = v[1], v[2], tonumber(v[3]), tonumber(v[4])
if not role then
  return -1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not created or not seen or now - created >= maxage or now - seen >= idle then
  redis.call('DEL', session)
  return -1
end
local current = false
for i = 3, #ARGV - 1, 2 do
  if ARGV[i] == role and ARGV[i + 1] == fp then
    current = true
  end
end
if not current then
  redis.call('DEL', session)
  return -2
end
redis.call('HSET', session, 'seen', now)
redis.call('PEXPIRE', session, math.min(idle, created + maxage - now))
return {role, created}
