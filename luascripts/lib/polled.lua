-- polled(who) records a failed attempt of a caller that waits by polling
-- in the poll waiters (locals polls, poll_id and poll_ttl; layout: the doc
-- of wire.PollWaitersKey): "<since ms> <deadline ms> <holder>".
local function polled(who)
  if polls and poll_id ~= '' then
    local entry_ttl = tonumber(poll_ttl)
    redis.call('HSET', polls, poll_id, (now - waited) .. ' ' .. (now + entry_ttl) .. ' ' .. who)
    redis.call('PEXPIRE', polls, entry_ttl)
  end
end
