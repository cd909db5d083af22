-- tokenbucket_delete: remove a token bucket and its stats.
--
-- KEYS[1] -> the bucket (HASH: last_mill_second, stored_permits, max_permits, interval, app)
-- KEYS[2] -> the bucket's stats (HASH, wire.StatsKey(KEYS[1]))
-- ARGV: none
--
-- Returns:
--    1  deleted
--    0  there was nothing to delete (the layout's other clients call that a success too)
--   -5  the key holds something that is not a bucket; nothing is deleted
local bucket = KEYS[1]
local stats = KEYS[2]

local kind = redis.call('TYPE', bucket)['ok']
if kind == 'none' then
  redis.call('DEL', stats)
  return 0
elseif kind ~= 'hash' or redis.call('HEXISTS', bucket, 'app') == 0 then
  return -5
end
redis.call('DEL', bucket, stats)
return 1
