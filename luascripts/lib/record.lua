-- record(outcome) counts one attempt in the stats hash (the script's local
-- stats, with now in Redis ms): one HINCRBY of "<outcome><bucket>" (layout:
-- the doc above wire.BucketMS). The first count of a field restarts the hash's
-- 5 s expiry and, once it holds more than 64 fields, deletes every field
-- outside the 16 newest buckets, so it stays small without a read on the
-- hot path. Numbers go to redis.call as strings formatted with %d: Redis
-- 7.0 formats a Lua number argument with %.17g and Lua's concatenation
-- uses %.14g, each about 0.2 µs, a tenth of a command.
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
