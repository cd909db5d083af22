-- auth_fail_wait: how long a source waits before its next token is checked;
-- only its own wait counts, so other sources' failures never keep it out.
--
-- KEYS[1] -> the source's failures (HASH: n, until in Redis ms)
-- ARGV: none
--
-- Returns the wait in ms; 0 when a token may be checked now.
local source = KEYS[1]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local untilms = tonumber(redis.call('HGET', source, 'until'))
if untilms and untilms > now then
  return untilms - now
end
return 0
