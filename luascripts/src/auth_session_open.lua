-- auth_session_open: start a console sign-in session, living min(idle,
-- max age) from now; auth_session_touch extends it while used.
--
-- KEYS[1] -> the session (HASH: role, fp, created, seen; times in Redis ms)
-- ARGV[1] -> role ("admin" or "viewer")
-- ARGV[2] -> keyed fingerprint of the token signed in with
-- ARGV[3] -> idle timeout (ms)
-- ARGV[4] -> maximum age (ms)
--
-- Returns:
--   >0 -> the creation time (Redis ms)
--    0 -> a session of that id exists already; nothing changed
local session = KEYS[1]
local role, fp = ARGV[1], ARGV[2]
local idle, maxage = tonumber(ARGV[3]), tonumber(ARGV[4])

if redis.call('EXISTS', session) == 1 then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', session, 'role', role, 'fp', fp, 'created', now, 'seen', now)
redis.call('PEXPIRE', session, math.min(idle, maxage))
return now
