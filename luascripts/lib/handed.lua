--#include lib/stamp.lua
--#include lib/held.lua
-- handed(who, token, others, ms) makes the script's lock who's for ms, a
-- hand-off to waiter token: holder field at count 1, its hold record
-- marked with token, and the queued mark when others still wait.
local function handed(who, token, others, ms)
  if others then
    redis.call('HSET', lock, who, '1', hold_field(who), stamp() .. ' ' .. token, queued_field, '1')
  else
    redis.call('HSET', lock, who, '1', hold_field(who), stamp() .. ' ' .. token)
  end
  redis.call('PEXPIRE', lock, ms)
end
