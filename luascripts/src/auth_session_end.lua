-- auth_session_end: end a sign-in session and take it out of its role's
-- index.
--
-- KEYS[1]   -> the session (HASH)
-- KEYS[2..] -> the sessions of each role (ZSET: id -> created)
-- ARGV[1]   -> the session id (its member in the index)
--
-- Returns 1 when the session existed, 0 when not.
local session, id = KEYS[1], ARGV[1]

for i = 2, #KEYS do
  redis.call('ZREM', KEYS[i], id)
end
return redis.call('DEL', session)
