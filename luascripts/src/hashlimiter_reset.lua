-- hashlimiter_reset: the console forgets a hash limiter's window (Laravel's
-- throttle, an Upstash token bucket) as the library's own clear does.
--
-- KEYS[1] -> the limiter (HASH): deleted only while it has every field named
-- ARGV[1..] -> the fields its layout has
--
-- Returns:
--    1 -> deleted
--    0 -> no such key
--   -2 -> the key is not that layout (another type, or a field missing); kept
--#include lib/of_type.lua
local limiter = KEYS[1]

local wrong = of_type(limiter, 'hash')
if wrong then
  return wrong
end
for i = 1, #ARGV do
  if redis.call('HEXISTS', limiter, ARGV[i]) == 0 then
    return -2
  end
end
redis.call('DEL', limiter)
return 1
