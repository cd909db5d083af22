-- hold(field, fresh, first) records a holder's times in the hold times
-- hash (the script's locals held, now and lease), one field per holder:
-- a fresh hold records its acquisition, a re-entry its renewal ("0"
-- acquired when none was kept). The hash expires with the lock: first
-- sets its expiry to lease (the lock's first holder, or a kind with one
-- holder at a time); otherwise, as a read-write lock's, it is only raised.
local function hold(field, fresh, first)
  if held then
    local since = now
    if not fresh then
      local v = redis.call('HGET', held, field)
      since = v and string.match(v, '^(%d+) ') or '0'
    end
    redis.call('HSET', held, field, since .. ' ' .. now)
    if first or redis.call('PTTL', held) < lease then
      redis.call('PEXPIRE', held, lease)
    end
  end
end
