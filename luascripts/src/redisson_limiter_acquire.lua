-- redisson_limiter_acquire: take permits from a Redisson RRateLimiter with
-- the emulated version's layout and decisions, and count the attempt.
--
-- KEYS[1] -> config (HASH: rate, interval ms, type 0 overall / 1 per client,
--            optional keepAliveTime ms)
-- KEYS[2] -> overall value (STRING), wire.RedissonValueKey(name, "")
-- KEYS[3] -> this client's value (STRING), wire.RedissonValueKey(name, id)
-- KEYS[4] -> overall grants (ZSET), wire.RedissonPermitsKey(name, "")
--            (sliding window only)
-- KEYS[5] -> this client's grants (ZSET), wire.RedissonPermitsKey(name, id)
-- KEYS[6] -> stats (HASH), wire.StatsKey(name)
-- ARGV[1] -> permits wanted, a whole number >= 1
-- ARGV[2] -> "fixed" (Redisson before 3.13.3) or "sliding" (3.13.3 and later)
-- ARGV[3] -> random grant id (sliding window: packed into the zset member;
--            for "fI" a decimal integer, packed as a float as Redisson does)
-- ARGV[4] -> struct.pack format of new grant members, the emulated version's:
--            "fI" (3.13.3-3.16.3), "Lc0I" (3.16.4), "Bc0I" (3.17.0 and later)
--
-- Returns {code, wait_ms, value}:
--    1 -> taken; value is what is left in the window
--   -1 -> not enough permits; wait_ms is Redisson's retry delay (fixed:
--         the value's PTTL; sliding: until the oldest grant returns, +3 ms
--         as Redisson adds)
--    0 -> no limiter configured at KEYS[1] (Redisson's "RateLimiter is not
--         initialized"); nothing is written but the stats ("e")
--   -4 -> more permits than the rate: can never succeed; stats "e"
--   -5 -> KEYS[1] is not a hash, or the value is not a number; stats "e"
--   -6 -> fixed window, but the value key has no expiry: the limiter is run
--         by a sliding-window Redisson (3.13.3+), whose window would never
--         end for us; nothing changed, stats "e"
local config = KEYS[1]
local stats = KEYS[6]
local want = tonumber(ARGV[1])
local algorithm = ARGV[2]
local grant_id = ARGV[3]
local member_format = ARGV[4]

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

--#include lib/record.lua

local kind = redis.call('TYPE', config)['ok']
if kind ~= 'hash' then
  record('e')
  if kind == 'none' then
    return {0, 0, 0}
  end
  return {-5, 0, 0}
end
local f = redis.call('HMGET', config, 'rate', 'interval', 'type', 'keepAliveTime')
local rate = tonumber(f[1])
local interval = tonumber(f[2])
if not f[1] or not f[2] or not f[3] then
  record('e')
  return {0, 0, 0}
end
if not rate or not interval or rate < 1 or interval < 1 then
  record('e')
  return {-5, 0, 0}
end
if not want or want < 1 or want > rate then
  record('e')
  return {-4, 0, 0}
end

local value_key = KEYS[2]
local grants_key = KEYS[4]
if f[3] == '1' then
  value_key = KEYS[3]
  grants_key = KEYS[5]
end

local raw = redis.call('GET', value_key)
local value = tonumber(raw)
if raw and not value then
  record('e')
  return {-5, 0, 0}
end

if algorithm == 'fixed' then
  -- Before 3.13.3: the window is the life of the value key.
  if not value then
    redis.call('SET', value_key, rate, 'PX', interval)
    value = redis.call('DECRBY', value_key, want)
    record('a')
    return {1, 0, value}
  end
  local wait = redis.call('PTTL', value_key)
  if wait < 0 then
    record('e')
    return {-6, 0, value}
  end
  if value < want then
    record('r')
    return {-1, wait, value}
  end
  value = redis.call('DECRBY', value_key, want)
  record('a')
  return {1, 0, value}
end

--#include lib/permits_of.lua

local function pack_grant()
  if member_format == 'fI' then
    return struct.pack('fI', tonumber(grant_id), want)
  end
  return struct.pack(member_format, string.len(grant_id), grant_id, want)
end

local code
local wait = 0
if not value then
  redis.call('SET', value_key, rate)
  value = rate
else
  local expired = redis.call('ZRANGEBYSCORE', grants_key, '0', now - interval)
  local released = 0
  for _, member in ipairs(expired) do
    released = released + permits_of(member)
  end
  if released > 0 then
    redis.call('ZREMRANGEBYSCORE', grants_key, '0', now - interval)
    if value + released > rate then
      -- The rate was lowered while grants were out: recount what is used.
      local used = 0
      for _, member in ipairs(redis.call('ZRANGE', grants_key, '0', '-1')) do
        used = used + permits_of(member)
      end
      value = rate - used
    else
      value = value + released
    end
    redis.call('SET', value_key, value)
  end
end
if value < want then
  local oldest = redis.call('ZRANGE', grants_key, '0', '0', 'WITHSCORES')
  if oldest[2] then
    wait = 3 + interval - (now - tonumber(oldest[2]))
  else
    wait = interval
  end
  code = -1
  record('r')
else
  redis.call('ZADD', grants_key, now, pack_grant())
  value = redis.call('DECRBY', value_key, want)
  code = 1
  record('a')
end

-- Redisson ties the state's life to the config's: keepAliveTime when set,
-- else whatever expiry the config hash has.
local keep_alive = tonumber(f[4])
if keep_alive and keep_alive > 0 then
  redis.call('PEXPIRE', config, keep_alive)
  redis.call('PEXPIRE', value_key, keep_alive)
  redis.call('PEXPIRE', grants_key, keep_alive)
else
  local ttl = redis.call('PTTL', config)
  if ttl > 0 then
    redis.call('PEXPIRE', value_key, ttl)
    redis.call('PEXPIRE', grants_key, ttl)
  end
end
return {code, wait, value}
