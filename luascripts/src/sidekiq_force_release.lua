-- sidekiq_force_release: the console removes one job's sidekiq-unique-jobs
-- lock as the library's own unlock does, and the digest once nobody holds it.
--
-- KEYS[1] -> the locked jobs (HASH), "<digest>:LOCKED": job id -> metadata
-- KEYS[2] -> the digests (ZSET), "uniquejobs:digests"
-- KEYS[3] -> the expiring digests (ZSET), "uniquejobs:expiring_digests"
-- KEYS[4] -> the digest (STRING), "<digest>" (v7/v8; deleted)
-- KEYS[5] -> the lock information (STRING), "<digest>:INFO" (v7/v8; deleted)
-- KEYS[6] -> the queued list (LIST), "<digest>:QUEUED" (v7/v8): waiters pop it
-- KEYS[7] -> the primed list (LIST), "<digest>:PRIMED" (v7/v8)
-- ARGV[1] -> the job id the admin saw
-- ARGV[2] -> the digest, the member of both zsets
-- ARGV[3] -> "1" for the v7/v8 layout (lists and a wake-up push), "0" for v9
--
-- Returns:
--    1 -> removed (the digest too when no job holds it any more)
--    0 -> no such key
--   -1 -> that job does not hold it; nothing changed
--   -2 -> the key is not a hash; nothing changed
--#include lib/of_type.lua
local locked = KEYS[1]
local digests = KEYS[2]
local expiring = KEYS[3]
local digest_key = KEYS[4]
local info = KEYS[5]
local queued = KEYS[6]
local primed = KEYS[7]
local jid = ARGV[1]
local digest = ARGV[2]
local lists = ARGV[3] == '1'

local wrong = of_type(locked, 'hash')
if wrong then
  return wrong
end
if redis.call('HEXISTS', locked, jid) == 0 then
  return -1
end
redis.call('HDEL', locked, jid)
if lists then
  redis.call('LREM', queued, '-1', jid)
  redis.call('LREM', primed, '-1', jid)
  redis.call('UNLINK', digest_key, info)
  if redis.call('LLEN', primed) == 0 then
    redis.call('UNLINK', primed)
  end
end
if redis.call('HLEN', locked) == 0 then
  redis.call('UNLINK', locked)
  redis.call('ZREM', digests, digest)
  redis.call('ZREM', expiring, digest)
end
if lists then
  redis.call('LPUSH', queued, '1')
  redis.call('PEXPIRE', queued, '5000')
end
return 1
