-- auth_session_open: start a sign-in session and list it in its role's
-- index, which keeps the newest few (the oldest past them are ended).
--
-- KEYS[1] -> the session (HASH: role, fp, created, seen; times in Redis ms;
--            ix = 1: listed in KEYS[2])
-- KEYS[2] -> the role's sessions (ZSET: session id -> created, Redis µs:
--            sign-ins within one ms keep their order)
-- ARGV[1] -> role ("admin" or "viewer")
-- ARGV[2] -> keyed fingerprint of the token signed in with
-- ARGV[3] -> idle timeout (ms)
-- ARGV[4] -> maximum age (ms)
-- ARGV[5] -> the session id (the member of KEYS[2])
-- ARGV[6] -> most sessions the role keeps
--
-- Returns:
--   {created, id...} -> the creation time (Redis ms), then the ids of the
--                       sessions this one ended, whose hashes the caller
--                       deletes (they can no longer be used: a key is named
--                       in KEYS, so this script cannot delete them itself)
--   0 -> a session of that id exists already; nothing changed
local session, index = KEYS[1], KEYS[2]
local role, fp = ARGV[1], ARGV[2]
local idle, maxage = tonumber(ARGV[3]), tonumber(ARGV[4])
local id, most = ARGV[5], tonumber(ARGV[6])

if redis.call('EXISTS', session) == 1 then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('HSET', session, 'role', role, 'fp', fp, 'created', now, 'seen', now, 'ix', '1')
redis.call('PEXPIRE', session, math.min(idle, maxage))

-- Sessions past their maximum age are over whatever their key says.
redis.call('ZREMRANGEBYSCORE', index, '-inf', now_us - maxage * 1000)
redis.call('ZADD', index, now_us, id)
local out = {now}
local over = redis.call('ZCARD', index) - most
if over > 0 then
  local popped = redis.call('ZPOPMIN', index, over)
  for i = 1, #popped, 2 do
    out[#out + 1] = popped[i]
  end
end
redis.call('PEXPIRE', index, maxage)
return out
