-- hold(field, fresh, first) records a read-write lock holder's times in
-- the hold times hash (locals held, now, lease), one field per holder
-- field: a fresh hold records its acquisition, a re-entry its renewal ("0"
-- acquired when none was kept). Like the lock's, the hash's expiry is
-- raised, never lowered, except by the lock's first holder, who sets both.
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
