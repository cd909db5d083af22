-- permits_of(member) reads the permits of a Redisson grant (a zset member
-- of the sliding window). Members are packed "fI" (Redisson 3.13.3-3.16.3),
-- "Lc0I" (3.16.4) or "Bc0I" (3.17.0+); each ends in the permits as a
-- uint32, so the last four bytes decode a member whichever version wrote
-- it (a zset left over from an upgrade holds several layouts).
local function permits_of(member)
  local n = string.len(member)
  if n < 5 then
    return 0
  end
  local permits = struct.unpack('I', member, n - 3)
  return permits
end
