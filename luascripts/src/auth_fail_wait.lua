-- auth_fail_wait: how long a source must wait before its next token may
-- be checked, after the failures auth_fail_record counted.
--
-- KEYS[1] -> the source's failures (HASH: n, until in Redis ms)
-- KEYS[2] -> every source's failures (HASH: n, until in Redis ms)
-- ARGV: none
--
-- Returns the wait in ms; 0 when a token may be checked now.
local source, all = KEYS[1], KEYS[2]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = 0
for _, key in ipairs({source, all}) do
  local untilms = tonumber(redis.call('HGET', key, 'until'))
  if untilms and untilms - now > wait then
    wait = untilms - now
  end
end
return wait
