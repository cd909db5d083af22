-- hash_read: the console reads one key it may show as a lock or limiter:
-- a hash whole only while it is small enough to be one, changing nothing.
--
-- KEYS[1] -> the object (HASH; a key of any other type is only reported)
-- ARGV[1] -> most fields read (inspect.MaxHashFields): a larger hash is
--            application data, reported by its size alone
--
-- Returns {size, pttl, now_ms, field, value, field, value, ...}:
--   size   -> HLEN: 0 when there is no key, -1 when the key is not a hash
--   pttl   -> PTTL of the key, Redis codes (-2 none, -1 no expiry)
--   now_ms -> Redis TIME in ms, the clock of waiter deadlines and refills
--   then every field and its value, only when 0 < size <= ARGV[1]
local key = KEYS[1]
local max_fields = tonumber(ARGV[1])

local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local size = redis.pcall('HLEN', key)
if type(size) == 'table' then
  return {-1, redis.call('PTTL', key), now}
end
local out = {size, redis.call('PTTL', key), now}
if size == 0 or size > max_fields then
  return out
end
local all = redis.call('HGETALL', key)
for i = 1, #all do
  out[3 + i] = all[i]
end
return out
