-- auth_fail_wait: how long a source must wait before its next token may
-- be checked, after the failures auth_fail_record counted. Only the
-- source's own wait counts: failures from other sources never keep a
-- token from being checked (auth_fail_record makes them lengthen the
-- wait of each source that fails instead).
--
-- KEYS[1] -> the source's failures (HASH: n, until in Redis ms)
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
