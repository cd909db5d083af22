-- fmt(x) is x as Redis gets it: %.17g keeps whole numbers whole and
-- fractions exact.
local function fmt(x)
  return string.format('%.17g', x)
end
