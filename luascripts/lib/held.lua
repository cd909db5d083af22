-- A hold record is a field of the lock's own hash, hold_field(holder)
-- (layout: the doc of wire.HoldField): "<acquired ms> <renewed ms>", and
-- " <token>" when a hand-off to that waiter token granted the hold. The
-- field queued_field says store waiters may be queued. renewed(v) is
-- record v with its renewal at the script's local now ("0" acquired when v
-- is absent); mark_of(v) is the token v was marked with, or nil.
local queued_field = 'lw:queued'
local function hold_field(who)
  return 'lw:held:' .. who
end
local function mark_of(v)
  return v and string.match(v, '^%d+ %d+ (.+)$')
end
local function renewed(v)
  local since, rest = string.match(v or '', '^(%d+) %d+(.*)$')
  return (since or '0') .. ' ' .. string.format('%d', now) .. (rest or '')
end
