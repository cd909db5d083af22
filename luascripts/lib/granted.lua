--#include lib/record_wait.lua
-- granted() counts the caller's grant, with its wait (the script's local
-- waited, ms) when it waited, and deletes its poll-waiter entry (locals
-- polls and poll_id, as polled writes it).
local function granted()
  if waited > 0 then
    record_wait(waited)
    if polls and poll_id ~= '' then
      redis.call('HDEL', polls, poll_id)
    end
  else
    record('a')
  end
end
