-- finite(x): tonumber accepts "nan" and "inf"; neither may reach the
-- arithmetic.
local function finite(x)
  return x ~= nil and x == x and x ~= math.huge and x ~= -math.huge
end
