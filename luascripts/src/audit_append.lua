-- audit_append: append a record to an audit stream kept by age.
--
-- KEYS[1]   -> the audit stream (STREAM)
-- ARGV[1]   -> retention (ms): entries older than it by Redis's clock (the
--              clock of the entry IDs) are trimmed (MINID ~); no number of
--              newer entries trims any
-- ARGV[2..] -> the record's field, value pairs
--
-- Returns the new entry's ID.
local stream = KEYS[1]
local retention = tonumber(ARGV[1])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local args = {'XADD', stream, 'MINID', '~', string.format('%d', math.max(now - retention, 0)), '*'}
for i = 2, #ARGV do
  args[#args + 1] = ARGV[i]
end
return redis.call(unpack(args))
