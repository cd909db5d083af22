-- A hold record is a field of the lock's own hash, hold_field(holder)
-- (layout: the doc of wire.HoldField): "<acquired ms> <renewed ms>", and
-- " <token>" when a hand-off to that waiter token granted the hold. The
-- field queued_field says store waiters may be queued.
local queued_field = 'lw:queued'
local function hold_field(who)
  return 'lw:held:' .. who
end
