-- auth_secret: the console's signing secret, stored by whichever replica
-- asks first and shared by every replica after.
--
-- KEYS[1] -> the secret (STRING)
-- ARGV[1] -> a fresh random secret (hex), kept only if KEYS[1] is missing
--
-- Returns the stored secret.
local key, fresh = KEYS[1], ARGV[1]

redis.call('SET', key, fresh, 'NX')
return redis.call('GET', key)
