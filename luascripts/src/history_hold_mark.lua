-- history_hold_mark: the console ended a running hold (a force-unlock) and
-- marks it so, for whichever replica writes the history.
--
-- KEYS[1] -> running holds (HASH, web/history/keys.go's OpenKey), as in
--            history_hold_write.lua
-- ARGV[1] -> holder
-- ARGV[2] -> how it ended ("force-unlocked")
--
-- Returns 1 when marked, 0 when the hold is not kept as running (no key
-- is created for a lock the history does not keep).
local running = KEYS[1]
local holder = ARGV[1]
if redis.call('HEXISTS', running, holder) == 0 then
  return 0
end
redis.call('HSET', running, 'x:' .. holder, ARGV[2])
return 1
