-- client_beat: one heartbeat of a store client in the client registry, or,
-- with an empty record, an announcement of object names.
--
-- KEYS[1] -> clients (HASH), wire.ClientsKey: client id -> JSON record
-- KEYS[2] -> names (ZSET), wire.ClientNamesKey: object name -> Redis TIME
--            ms of its announcement
-- ARGV[1] -> client id
-- ARGV[2] -> the record's JSON without its closing brace and without
--            heartbeat_ms (the script appends it); "" for a names-only flush
-- ARGV[3] -> HSCAN cursor for the stale-record sweep ("0" starts over)
-- ARGV[4..] -> object names to announce (at most 1000)
--
-- Returns: { now_ms, next_cursor } (next_cursor is ARGV[3] unchanged on a
-- names-only flush).
local id = ARGV[1]
local record = ARGV[2]
local cursor = ARGV[3]
local staleMS = 3600000
local namesKeepMS = 600000
local sweepCount = 100

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

if #ARGV >= 4 then
  local args = {}
  for i = 4, #ARGV do
    args[#args + 1] = now
    args[#args + 1] = ARGV[i]
  end
  redis.call('ZADD', KEYS[2], unpack(args))
end

if record == '' then
  return { now, cursor }
end

redis.call('HSET', KEYS[1], id, record .. ',"heartbeat_ms":' .. string.format('%d', now) .. '}')
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%d', now - namesKeepMS))

local page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', sweepCount)
local fields = page[2]
local swept = 0
for i = 1, #fields, 2 do
  if swept >= sweepCount then break end
  local ok, rec = pcall(cjson.decode, fields[i + 1])
  local beat = ok and type(rec) == 'table' and tonumber(rec['heartbeat_ms']) or nil
  if beat == nil or now - beat > staleMS then
    redis.call('HDEL', KEYS[1], fields[i])
  end
  swept = swept + 1
end
return { now, page[1] }
