--#include lib/held.lua
-- renewed(v) is hold record v with its renewal at the script's local now
-- ("0" acquired when v is absent); mark_of(v) is the token v was marked
-- with, or nil.
local function mark_of(v)
  return v and string.match(v, '^%d+ %d+ (.+)$')
end
local function renewed(v)
  local since, rest = string.match(v or '', '^(%d+) %d+(.*)$')
  return (since or '0') .. ' ' .. string.format('%d', now) .. (rest or '')
end
