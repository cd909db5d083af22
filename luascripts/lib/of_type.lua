-- of_type(key, want) is the release code of a key that is not want's type:
-- 0 when it does not exist, -2 when it holds another type; nil when it is
-- a want.
local function of_type(key, want)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'none' then
    return 0
  end
  if kind ~= want then
    return -2
  end
  return nil
end
