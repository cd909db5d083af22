--#include lib/record.lua
-- record_wait(ms) counts a grant that waited ms into its bucket (layout:
-- the doc above wire.WaitClassBoundsMS): its "a", one histogram class
-- "<A..J><bucket>" (bounds 1, 3, 10, 30, 100, 300, 1000, 3000, 10000 ms;
-- J above), the total "t<bucket>" and the max "m<bucket>", read with one
-- HMGET and written with one HSET. The bucket's first grant goes through
-- record instead, which restarts the hash's expiry and trims it.
local function record_wait(ms)
  local bucket = string.format('%d', math.floor(now / 200))
  ms = math.max(0, math.floor(ms))
  local class = 1
  for _, bound in ipairs({1, 3, 10, 30, 100, 300, 1000, 3000, 10000}) do
    if ms <= bound then
      break
    end
    class = class + 1
  end
  local a, c, total, max = 'a' .. bucket, string.sub('ABCDEFGHIJ', class, class) .. bucket, 't' .. bucket, 'm' .. bucket
  local v = redis.call('HMGET', stats, a, c, total, max)
  local set = {c, string.format('%d', (tonumber(v[2]) or 0) + 1), total, string.format('%d', (tonumber(v[3]) or 0) + ms),
    max, string.format('%d', math.max(tonumber(v[4]) or -1, ms))}
  if v[1] then
    set[7], set[8] = a, string.format('%d', (tonumber(v[1]) or 0) + 1)
  end
  redis.call('HSET', stats, unpack(set))
  if not v[1] then
    record('a')
  end
end
