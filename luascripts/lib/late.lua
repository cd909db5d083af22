-- late(op, who, next, since) records that a release or renewal (op) of
-- holder who came after its hold had ended, in the script that refuses it
-- (layout: the doc of wire.LateFieldPrefix): the field "late:<who>" of the stats
-- hash (the script's local stats) -> "<op> <at> <since> <next>", and the
-- same, "<#who> <who> <op> <at> <since> <next>", published on the lease
-- channel built from stats (wire.LateChannel), where the console hears it.
-- at is Redis time in ms, next the holder the lock has now ("" when free)
-- and since that holder's recorded acquisition (0 when unknown).
local function late(op, who, next, since)
  local t = redis.call('TIME')
  local rec = op .. ' ' .. string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)) ..
    ' ' .. since .. ' ' .. next
  redis.call('HSET', stats, 'late:' .. who, rec)
  redis.call('PEXPIRE', stats, '5000')
  local i = string.find(stats, '}:stats:', 1, true)
  if i then
    redis.call('PUBLISH', string.sub(stats, 1, i) .. ':late:' .. string.sub(stats, i + 8),
      string.format('%d', #who) .. ' ' .. who .. ' ' .. rec)
  end
end
-- next_holder(fields) is the holder an HGETALL of a lock hash names
-- (lockwarden's own fields and a read-write lock's mode skipped) and its
-- recorded acquisition: "" and "0" when none.
local function next_holder(fields)
  local found, since = '', '0'
  for i = 1, #fields, 2 do
    local f = fields[i]
    if string.sub(f, 1, 3) ~= 'lw:' and f ~= 'mode' then
      found = f
    end
  end
  for i = 1, #fields, 2 do
    if fields[i] == 'lw:held:' .. found then
      since = string.match(fields[i + 1], '^(%d+) ') or '0'
    end
  end
  return found, since
end
