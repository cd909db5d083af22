-- stamp() is "<now> <now>", a hold's times when it starts, formatted with
-- %d (see record).
local function stamp()
  local s = string.format('%d', now)
  return s .. ' ' .. s
end
