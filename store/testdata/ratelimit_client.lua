-- TEST FIXTURE ONLY: never shipped, never run by lockwarden itself.
--
-- A re-statement, written for this project, of the single-script token
-- bucket that applications keep in a "ratelimit:<app>" hash (fields
-- last_mill_second, stored_permits, max_permits, interval, app), with the
-- client passing its own clock. The compatibility tests use it to play "the
-- other client": a bucket made by this script must work with
-- luascripts/tokenbucket_*.lua, and the other way round. It keeps that
-- script's known weakness (a refill sets last_mill_second to now, losing
-- the unused part of an interval), so that the tests talk to the real thing.
--
-- KEYS[1] -> the bucket (HASH: last_mill_second, stored_permits, max_permits, interval, app)
-- ARGV[1] -> method: init | modify | delete | acquire
-- ARGV[2] -> current time in ms, supplied by the caller
-- init:    ARGV[3] initial permits, ARGV[4] max permits, ARGV[5] interval ms, ARGV[6] app
-- modify:  ARGV[3] max permits, ARGV[4] interval ms
-- acquire: ARGV[3] permits
--
-- Returns 1 success, 0 not configured (acquire: no limit), -1 acquire failed,
-- -2 modify of a bucket that is not configured, -500 unknown method.
local key = KEYS[1]
local method = ARGV[1]
local now = tonumber(ARGV[2])

local state = redis.call('HMGET', key, 'last_mill_second', 'stored_permits', 'max_permits', 'interval', 'app')
local configured = state[5] ~= false and state[5] ~= nil

if method == 'init' then
  if not configured then
    redis.call('HSET', key,
      'last_mill_second', ARGV[2],
      'stored_permits', ARGV[3],
      'max_permits', ARGV[4],
      'interval', ARGV[5],
      'app', ARGV[6])
  end
  return 1
elseif method == 'modify' then
  if not configured then
    return -2
  end
  -- Only the configuration moves; stored permits and time are not touched.
  redis.call('HSET', key, 'max_permits', ARGV[3], 'interval', ARGV[4])
  return 1
elseif method == 'delete' then
  if configured then
    redis.call('DEL', key)
  end
  return 1
elseif method == 'acquire' then
  if not configured then
    return 0
  end
  local last = tonumber(state[1])
  local stored = tonumber(state[2])
  local max = tonumber(state[3])
  local interval = tonumber(state[4])
  local want = tonumber(ARGV[3])
  local gained = math.max(0, math.floor((now - last) / interval))
  local have = math.min(max, stored + gained)
  local code = -1
  if have >= want then
    have = have - want
    code = 1
  end
  redis.call('HSET', key, 'stored_permits', have)
  if gained > 0 then
    -- That script's known weakness, kept on purpose: the rest of the interval is lost.
    redis.call('HSET', key, 'last_mill_second', now)
  end
  return code
end
return -500
