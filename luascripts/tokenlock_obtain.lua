-- tokenlock_obtain: take a token lock (the SET NX PX layout
-- redsync and bsm/redislock use) and count the attempt in the stats.
--
-- KEYS[1] -> the lock (STRING): the holder's random token
-- KEYS[2] -> stats (HASH), store.StatsKey(name)
-- KEYS[3] -> (optional) hold times (HASH), store.HeldKey(name): token ->
--            "<acquired ms> <renewed ms>" (Redis time), expiring with the
--            lock; a re-obtain keeps "acquired" and moves "renewed"
-- ARGV[1] -> token
-- ARGV[2] -> lease in milliseconds (PX)
--
-- Returns {taken, pttl_ms}:
--   {1, lease} -> taken ("a")
--   {0, pttl}  -> held by another token (or the key is not a string); pttl
--                 is its remaining lease, -1 when it has none ("r")
--   A caller that already holds the lock (same token) gets it again with
--   its lease restarted, as a re-obtain after a retry must not fail.
local lock = KEYS[1]
local stats = KEYS[2]
local token = ARGV[1]
local lease = ARGV[2]
local held = KEYS[3]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Stats: the same block in every script that counts outcomes (layout in
-- store/internal/wire/wire.go). An attempt costs one HINCRBY of "<outcome><bucket>";
-- the first count of a field also restarts the hash's 5 s expiry and, once
-- the hash holds more than 64 fields, deletes every field outside the 16
-- newest buckets, so the hash stays small without a read on the hot path.
local function record(outcome)
  local bucket = math.floor(now / 200)
  if redis.call('HINCRBY', stats, outcome .. bucket, 1) == 1 then
    redis.call('PEXPIRE', stats, 5000)
    if redis.call('HLEN', stats) > 64 then
      local old = {}
      for _, field in ipairs(redis.call('HKEYS', stats)) do
        local b = tonumber(string.match(field, '^[are](%d+)$'))
        if not b or b <= bucket - 16 or b > bucket then
          old[#old + 1] = field
        end
      end
      if #old > 0 then
        redis.call('HDEL', stats, unpack(old))
      end
    end
  end
end

-- hold records the holder's times; fresh for a new hold.
local function hold(fresh)
  if held then
    local since = now
    if not fresh then
      local v = redis.call('HGET', held, token)
      since = v and string.match(v, '^(%d+) ') or '0'
    end
    redis.call('HSET', held, token, since .. ' ' .. now)
    redis.call('PEXPIRE', held, lease)
  end
end

if redis.call('SET', lock, token, 'NX', 'PX', lease) then
  hold(true)
  record('a')
  return {1, tonumber(lease)}
end
local kind = redis.call('TYPE', lock)['ok']
if kind == 'string' and redis.call('GET', lock) == token then
  redis.call('PEXPIRE', lock, lease)
  hold(false)
  record('a')
  return {1, tonumber(lease)}
end
record('r')
return {0, redis.call('PTTL', lock)}
