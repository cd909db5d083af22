-- fairlock_drop_client: the console takes a crashed client's places, the
-- ones the admin saw, out of a Redisson RFairLock's queue.
--
-- KEYS[1] -> lock (HASH)
-- KEYS[2] -> queue (LIST), wire.FairLockQueueKey(name)
-- KEYS[3] -> deadlines (ZSET), wire.FairLockTimeoutKey(name)
-- ARGV[1] -> the client's id prefix, "<uuid>:"; a place whose id does not
--            start with it is never removed
-- ARGV[2] -> thread wait time in milliseconds by which later deadlines move
-- ARGV[3] -> channel prefix, wire.UnlockChannel(name); a waiter's channel
--            is the prefix, ':' and its id
-- ARGV[4] -> message (Redisson's UNLOCK_MESSAGE "0")
-- ARGV[5] -> "1" to SPUBLISH as well as PUBLISH, else "0" (announce)
-- ARGV[6..] -> the waiter ids the admin saw
--
-- Returns the list of waiter ids removed, in queue order (empty when none
-- of them was still queued: nothing changed).
local lock = KEYS[1]
local queue = KEYS[2]
local timeouts = KEYS[3]
local client = ARGV[1]
local wait = tonumber(ARGV[2])
local prefix = ARGV[3]
local message = ARGV[4]
local sharded = ARGV[5] == '1'

local wanted = {}
for i = 6, #ARGV do
  if string.sub(ARGV[i], 1, #client) == client then
    wanted[ARGV[i]] = true
  end
end

-- The queue is read whole, as Redisson's removal does: the shift needs
-- every place behind the removed ones.
local places = redis.call('LRANGE', queue, '0', '-1')
local removed = {}
local shift = 0
for _, id in ipairs(places) do
  if wanted[id] then
    wanted[id] = nil
    removed[#removed + 1] = id
    shift = shift + wait
  elseif shift > 0 then
    -- XX: a place without a deadline is not given one.
    redis.call('ZADD', timeouts, 'XX', 'INCR', -shift, id)
  end
end
if #removed == 0 then
  return removed
end
for _, id in ipairs(removed) do
  redis.call('LREM', queue, '0', id)
  redis.call('ZREM', timeouts, id)
end

if removed[1] == places[1] and redis.call('EXISTS', lock) == 0 then
  local head = redis.call('LINDEX', queue, '0')
  if head then
    redis.call('PUBLISH', prefix .. ':' .. head, message)
    if sharded then
      redis.call('SPUBLISH', prefix .. ':' .. head, message)
    end
  end
end
return removed
