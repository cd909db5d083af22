-- redisson_limiter_set_rate: change a Redisson RRateLimiter's rate and
-- interval, restarting its windows (setRate) or keeping what they granted.
--
-- KEYS[1]   -> config (HASH: rate, interval, type, keepAliveTime)
-- KEYS[2..] -> state, in pairs: a value key (STRING,
--              wire.RedissonValueKey) then its grants key (ZSET,
--              wire.RedissonPermitsKey); every client's pair when the
--              caller edits for all of them. When ARGV[3] names a type,
--              KEYS[2..3] are that type's pair and any further keys are
--              state of the other type, which only a change of type
--              deletes (a handle names both its overall and its own
--              per-client pair; other clients' pairs need a SCAN)
-- ARGV[1] -> new rate, permits per interval (>= 1)
-- ARGV[2] -> new interval in ms (>= 1)
-- ARGV[3] -> type to write: "0", "1", or "" to keep the current one
-- ARGV[4] -> keepAliveTime in ms to write; "" leaves the field as it is
-- ARGV[5] -> "reset" (Redisson's setRate: every state key given is
--            deleted) or "keep" (updateRate with keepState: what the
--            running window granted stays taken); a change of type always
--            resets
-- ARGV[6] -> "fixed" or "sliding": how the clients of this limiter keep
--            state; "" to infer it from each window (a grants zset or a
--            value without expiry is sliding, a value with one is fixed),
--            as for a per-client limiter whose overall state says nothing
-- ARGV[7] -> "create" to configure a missing limiter, "existing" to refuse
-- ARGV[8] -> (optional) the rate before the edit, for a call that carries
--            the next batch of a per-client limiter's pairs after an earlier
--            call changed the config: "keep" must count what was taken
--            against the old rate, which the config no longer holds
--
-- Returns {code, states_changed, old_rate}:
--    1 -> changed (old_rate: the rate "keep" counted against)
--    0 -> no limiter at KEYS[1] and ARGV[7] is "existing"; nothing changed
--   -5 -> KEYS[1] is not a Redisson limiter config; nothing changed
local config = KEYS[1]
local rate = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local new_type = ARGV[3]
local keep_alive = ARGV[4]
local mode = ARGV[5]
local algorithm = ARGV[6]
local create = ARGV[7] == 'create'
-- last key of the state this call edits in place (see KEYS above)
local last_own = #KEYS
if new_type ~= '' and #KEYS > 3 then
  last_own = 3
end

local kind = redis.call('TYPE', config)['ok']
if kind == 'none' and not create then
  return {0, 0}
end
if kind ~= 'none' and kind ~= 'hash' then
  return {-5, 0}
end
local old = redis.call('HMGET', config, 'rate', 'interval', 'type')
if kind == 'hash' and (not old[1] or not old[2] or not old[3]) then
  return {-5, 0}
end
local old_rate = tonumber(ARGV[8] or '') or tonumber(old[1]) or rate
if new_type == '' then
  new_type = old[3] or '0'
end

redis.call('HSET', config, 'rate', ARGV[1], 'interval', ARGV[2], 'type', new_type)
if keep_alive ~= '' then
  redis.call('HSET', config, 'keepAliveTime', keep_alive)
  if tonumber(keep_alive) > 0 then
    redis.call('PEXPIRE', config, keep_alive)
  end
end

if old[3] and old[3] ~= new_type then
  local n = 0
  for i = 2, #KEYS do
    n = n + redis.call('DEL', KEYS[i])
  end
  return {1, n, old_rate}
end
if mode ~= 'keep' then
  local n = 0
  for i = 2, last_own do
    n = n + redis.call('DEL', KEYS[i])
  end
  return {1, n, old_rate}
end

--#include lib/permits_of.lua

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local changed = 0
for i = 2, last_own - 1, 2 do
  local value_key = KEYS[i]
  local grants_key = KEYS[i + 1]
  local value = tonumber(redis.call('GET', value_key))
  local algorithm = algorithm
  if algorithm == '' then
    if redis.call('EXISTS', grants_key) == 1 or (value and redis.call('PTTL', value_key) == -1) then
      algorithm = 'sliding'
    elseif value then
      algorithm = 'fixed'
    end
  end
  if algorithm == 'fixed' and value then
    local taken = math.max(0, old_rate - value)
    redis.call('SET', value_key, math.max(0, rate - taken), 'KEEPTTL')
    local ttl = redis.call('PTTL', value_key)
    if ttl < 0 or ttl > interval then
      redis.call('PEXPIRE', value_key, interval)
    end
    changed = changed + 1
  elseif algorithm == 'sliding' and (value or redis.call('EXISTS', grants_key) == 1) then
    redis.call('ZREMRANGEBYSCORE', grants_key, '0', now - interval)
    local used = 0
    for _, member in ipairs(redis.call('ZRANGE', grants_key, '0', '-1')) do
      used = used + permits_of(member)
    end
    redis.call('SET', value_key, math.max(0, rate - used), 'KEEPTTL')
    changed = changed + 1
  end
end
return {1, changed, old_rate}
