-- counter_hit: n hits on an access counter (INCRBY, EXPIRE on the
-- first hit of a window, reject above the limit), counted in the stats.
--
-- KEYS[1] -> the counter (STRING): hits in the current window
-- KEYS[2] -> stats (HASH), store.StatsKey(name)
-- ARGV[1] -> window in milliseconds
-- ARGV[2] -> limit: the most hits a window admits
-- ARGV[3] -> n: hits this call makes, 1..limit (hand-written INCR limiters make 1)
--
-- Returns {allowed, count, pttl_ms}: allowed 1 ("a") or 0 ("r"); count after
-- these hits (rejected hits count too, as INCR-first limiters count them); the window's PTTL.
-- A counter left without expiry (a client that died between INCR and
-- EXPIRE in a non-atomic variant) would reject forever, so the window is
-- started again whenever none is running.
local counter = KEYS[1]
local stats = KEYS[2]
local window = ARGV[1]
local limit = tonumber(ARGV[2])
local hits = tonumber(ARGV[3])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Stats: the same block in every script that counts outcomes (layout in
-- store/internal/wire/wire.go). An attempt costs one HINCRBY of "<outcome><bucket>";
-- the first count of a field also restarts the hash's 5 s expiry and, once
-- the hash holds more than 64 fields, deletes every field outside the 16
-- newest buckets, so the hash stays small without a read on the hot path.
-- Arguments go to redis.call as strings, formatted with %d: Redis 7.0
-- formats a Lua number argument with %.17g, and Lua's own concatenation
-- with %.14g, each about 0.2 µs, a tenth of a command.
local function record(outcome)
  local bucket = math.floor(now / 200)
  if redis.call('HINCRBY', stats, outcome .. string.format('%d', bucket), '1') == 1 then
    redis.call('PEXPIRE', stats, '5000')
    if redis.call('HLEN', stats) > 64 then
      local old = {}
      for _, field in ipairs(redis.call('HKEYS', stats)) do
        local b = tonumber(string.match(field, '^%a(%d+)$'))
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

local count = redis.call('INCRBY', counter, hits)
local ttl = redis.call('PTTL', counter)
if count == hits or ttl < 0 then
  redis.call('PEXPIRE', counter, window)
  ttl = tonumber(window)
end
if count > limit then
  record('r')
  return {0, count, ttl}
end
record('a')
return {1, count, ttl}
