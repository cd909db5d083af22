-- redisson_limiter_state: read one window of a Redisson RRateLimiter as the
-- next acquire would see it, changing nothing.
--
-- KEYS[1] -> config (HASH: rate, interval, type, keepAliveTime)
-- KEYS[2] -> value (STRING), wire.RedissonValueKey(name, id)
-- KEYS[3] -> grants (ZSET), wire.RedissonPermitsKey(name, id)
-- ARGV[1] -> most grants to decode (bounds the work on a huge window)
--
-- Returns {found, value, value_pttl, has_grants, used, oldest_ms, now_ms, truncated}:
--   found      -> 0 when KEYS[1] has no rate/interval/type (then all else 0)
--   value      -> permits an acquire could take now: the stored value plus
--                 grants that fell out of the sliding window, capped as
--                 Redisson caps it; -1 when there is no value key yet
--   value_pttl -> PTTL of the value key (a fixed window's end), Redis codes
--   has_grants -> 1 when the grants zset exists (a sliding window, Redisson
--                 3.13.3 and later)
--   used       -> permits granted within the last interval (sliding)
--   oldest_ms  -> score of the oldest grant still in the window, 0 if none
--   truncated  -> 1 when more than ARGV[1] grants were in the window and
--                 used counts only the first ARGV[1]
local config = KEYS[1]
local value_key = KEYS[2]
local grants_key = KEYS[3]
local max_decode = tonumber(ARGV[1])

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

if redis.call('TYPE', config)['ok'] ~= 'hash' then
  return {0, 0, 0, 0, 0, 0, now, 0}
end
local f = redis.call('HMGET', config, 'rate', 'interval', 'type')
local rate = tonumber(f[1])
local interval = tonumber(f[2])
if not rate or not interval or not f[3] then
  return {0, 0, 0, 0, 0, 0, now, 0}
end

-- Members are packed "fI" (Redisson 3.13.3-3.16.3), "Lc0I" (3.16.4) or
-- "Bc0I" (3.17.0+); each ends in the permits as a uint32, so the last four
-- bytes decode all three.
local function sum(members)
  local total = 0
  for _, member in ipairs(members) do
    local n = string.len(member)
    if n >= 5 then
      total = total + struct.unpack('I', member, n - 3)
    end
  end
  return total
end

local value = -1
local value_type = redis.call('TYPE', value_key)['ok']
if value_type == 'string' then
  value = tonumber(redis.call('GET', value_key)) or -1
end
local pttl = redis.call('PTTL', value_key)

local has_grants = 0
local used, oldest, truncated = 0, 0, 0
if redis.call('TYPE', grants_key)['ok'] == 'zset' then
  has_grants = 1
  local live = redis.call('ZRANGEBYSCORE', grants_key, '(' .. (now - interval), '+inf', 'WITHSCORES', 'LIMIT', '0', max_decode)
  local members = {}
  for i = 1, #live, 2 do
    members[#members + 1] = live[i]
  end
  if live[2] then
    oldest = tonumber(live[2])
  end
  used = sum(members)
  if #members == max_decode and redis.call('ZCOUNT', grants_key, '(' .. (now - interval), '+inf') > max_decode then
    truncated = 1
  end
  if value >= 0 then
    local released = sum(redis.call('ZRANGEBYSCORE', grants_key, '0', now - interval, 'LIMIT', '0', max_decode))
    if released > 0 then
      if value + released > rate then
        value = math.max(0, rate - used)
      else
        value = value + released
      end
    end
  end
end
return {1, value, pttl, has_grants, used, oldest, now, truncated}
