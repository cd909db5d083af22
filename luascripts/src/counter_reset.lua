-- counter_reset: the console forgets an access counter's hits, so the
-- client it limits is admitted again at once.
--
-- KEYS[1] -> the counter (STRING): deleted only while it holds a whole number
-- ARGV: none
--
-- Returns:
--    1 -> deleted
--    0 -> no such key
--   -2 -> the key is not a counter (another type, or not a number); kept
local counter = KEYS[1]

local kind = redis.call('TYPE', counter)['ok']
if kind == 'none' then
  return 0
end
if kind ~= 'string' then
  return -2
end
local v = redis.call('GET', counter)
if not string.match(v, '^%-?%d+$') then
  return -2
end
redis.call('DEL', counter)
return 1
