-- symfony_force_release: the console removes one holder of a Symfony Lock
-- RedisStore lock as the store's own delete does.
--
-- KEYS[1] -> the lock (ZSET): token -> expiry (ms), "__write__" for a writer
-- ARGV[1] -> the token the admin saw
--
-- Returns:
--    1 -> removed (the key is gone when nobody is left)
--    0 -> no such key
--   -1 -> that token does not hold it; nothing changed
--   -2 -> the key is not a sorted set; nothing changed
--#include lib/of_type.lua
local lock = KEYS[1]
local token = ARGV[1]

local wrong = of_type(lock, 'zset')
if wrong then
  return wrong
end
if not redis.call('ZSCORE', lock, token) then
  return -1
end
redis.call('ZREM', lock, token)
redis.call('ZREM', lock, '__write__')
local last = redis.call('ZREVRANGE', lock, '0', '0', 'WITHSCORES')[2]
if last then
  redis.call('PEXPIREAT', lock, last)
end
return 1
