-- history_hold_write: one lock's hold changes since the last flush, written
-- by the history's writer.
--
-- KEYS[1] -> running holds (HASH, web/history/keys.go's OpenKey): holder ->
--            "<from> <client>", "x:<holder>" -> how the console ended it
--            (history_hold_mark.lua), which wins over the writer's own verdict
-- KEYS[2] -> ended holds (LIST, HoldsKey there), newest first
-- ARGV[1] -> holds to keep in KEYS[2]
-- ARGV[2] -> expiry of both keys, ms
-- ARGV[3] -> "1": KEYS[1] is replaced by the running holds given (a new
--            writer does not know what the last one left); "0": updated
-- ARGV[4] -> n, the number of ended holds that follow, oldest first
-- ARGV[5 .. 4+3n] -> per ended hold: holder, verdict, entry without verdict
-- ARGV[5+3n ..] -> running holds: holder, "<from> <client>" pairs
--
-- Returns the number of ended holds pushed (entries already at the head
-- of KEYS[2], from a flush whose reply was lost, are not pushed again).
local running = KEYS[1]
local ended = KEYS[2]
local keep = tonumber(ARGV[1])
local ttl = ARGV[2]
local replace = ARGV[3] == '1'
local n = tonumber(ARGV[4])

local head = {}
if n > 0 then
  for _, e in ipairs(redis.call('LRANGE', ended, '0', n - 1)) do
    head[e] = true
  end
end
local pushed = 0
for i = 0, n - 1 do
  local holder = ARGV[5 + 3 * i]
  local verdict = redis.call('HGET', running, 'x:' .. holder) or ARGV[6 + 3 * i]
  local entry = verdict .. ' ' .. ARGV[7 + 3 * i]
  if not head[entry] then
    redis.call('LPUSH', ended, entry)
    pushed = pushed + 1
  end
  redis.call('HDEL', running, holder, 'x:' .. holder)
end
if replace then
  redis.call('DEL', running)
end
for i = 5 + 3 * n, #ARGV, 2 do
  redis.call('HSET', running, ARGV[i], ARGV[i + 1])
end
if redis.call('EXISTS', ended) == 1 then
  redis.call('LTRIM', ended, '0', keep - 1)
  redis.call('PEXPIRE', ended, ttl)
end
if redis.call('EXISTS', running) == 1 then
  redis.call('PEXPIRE', running, ttl)
end
return pushed
