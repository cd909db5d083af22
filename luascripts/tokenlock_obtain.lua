-- tokenlock_obtain: take a token lock (the SET NX PX layout
-- redsync and bsm/redislock use) and count the attempt in the stats.
--
-- KEYS[1] -> the lock (STRING): the holder's random token
-- KEYS[2] -> stats (HASH), store.StatsKey(name)
-- KEYS[3] -> (optional) hold times (HASH), store.HeldKey(name): token ->
--            "<acquired ms> <renewed ms>" (Redis time), expiring with the
--            lock; a re-obtain keeps "acquired" and moves "renewed"
-- ARGV[1] -> token
-- ARGV[2] -> lease in milliseconds (PX)
-- ARGV[3] -> (optional) ms the caller has waited so far, measured by its
--            client since the first attempt of this wait; "0" or absent
--            for a first attempt. A grant with a wait records it in the
--            stats (layout in store/internal/wire/wire.go).
-- ARGV[4] -> (optional, with KEYS[4]) poll-waiter id of a waiting caller:
--            a failed attempt writes its entry in KEYS[4], the grant
--            deletes it
-- ARGV[5] -> (with ARGV[4]) lifetime of that entry in ms
-- KEYS[4] -> (optional) poll waiters (HASH), wire.PollWaitersKey(name):
--            id -> "<since ms> <deadline ms> <holder>"
--
-- Returns {taken, pttl_ms}:
--   {1, lease} -> taken ("a")
--   {0, pttl}  -> held by another token (or the key is not a string); pttl
--                 is its remaining lease, -1 when it has none ("r")
--   A caller that already holds the lock (same token) gets it again with
--   its lease restarted, as a re-obtain after a retry must not fail.
local lock = KEYS[1]
local stats = KEYS[2]
local token = ARGV[1]
local lease = ARGV[2]
local held = KEYS[3]
local waited = tonumber(ARGV[3] or '') or 0
local poll_id = ARGV[4] or ''
local poll_ttl = ARGV[5]
local polls = KEYS[4]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Stats: the same block in every script that counts outcomes (layout in
-- store/internal/wire/wire.go). An attempt costs one HINCRBY of "<outcome><bucket>";
-- the first count of a field also restarts the hash's 5 s expiry and, once
-- the hash holds more than 64 fields, deletes every field outside the 16
-- newest buckets, so the hash stays small without a read on the hot path.
-- Arguments go to redis.call as strings, formatted with %d: Redis 7.0
-- formats a Lua number argument with %.17g, and Lua's own concatenation
-- with %.14g, each about 0.2 µs, a tenth of a command.
local function record(outcome)
  local bucket = math.floor(now / 200)
  if redis.call('HINCRBY', stats, outcome .. string.format('%d', bucket), '1') == 1 then
    redis.call('PEXPIRE', stats, '5000')
    if redis.call('HLEN', stats) > 64 then
      local old = {}
      for _, field in ipairs(redis.call('HKEYS', stats)) do
        local b = tonumber(string.match(field, '^%a(%d+)$'))
        if not b or b <= bucket - 16 or b > bucket then
          old[#old + 1] = field
        end
      end
      if #old > 0 then
        redis.call('HDEL', stats, unpack(old))
      end
    end
  end
end

-- A grant that waited ms, into its bucket (layout in
-- store/internal/wire/wire.go): its "a", one histogram class
-- "<A..J><bucket>" (bounds 1, 3, 10, 30, 100, 300, 1000, 3000, 10000 ms;
-- J above), the total "t<bucket>" and the max "m<bucket>", read with one
-- HMGET and written with one HSET. The bucket's first grant goes through
-- record instead, which restarts the hash's expiry and trims it.
local function record_wait(ms)
  local bucket = string.format('%d', math.floor(now / 200))
  ms = math.max(0, math.floor(ms))
  local class = 1
  for _, bound in ipairs({1, 3, 10, 30, 100, 300, 1000, 3000, 10000}) do
    if ms <= bound then
      break
    end
    class = class + 1
  end
  local a, c, total, max = 'a' .. bucket, string.sub('ABCDEFGHIJ', class, class) .. bucket, 't' .. bucket, 'm' .. bucket
  local v = redis.call('HMGET', stats, a, c, total, max)
  local set = {c, string.format('%d', (tonumber(v[2]) or 0) + 1), total, string.format('%d', (tonumber(v[3]) or 0) + ms),
    max, string.format('%d', math.max(tonumber(v[4]) or -1, ms))}
  if v[1] then
    set[7], set[8] = a, string.format('%d', (tonumber(v[1]) or 0) + 1)
  end
  redis.call('HSET', stats, unpack(set))
  if not v[1] then
    record('a')
  end
end

-- granted counts the caller's grant, with its wait if it waited, and
-- deletes its poll-waiter entry.
local function granted()
  if waited > 0 then
    record_wait(waited)
    if polls and poll_id ~= '' then
      redis.call('HDEL', polls, poll_id)
    end
  else
    record('a')
  end
end

-- polled records a failed attempt of a waiting caller in the poll waiters.
local function polled(who)
  if polls and poll_id ~= '' then
    local entry_ttl = tonumber(poll_ttl)
    redis.call('HSET', polls, poll_id, (now - waited) .. ' ' .. (now + entry_ttl) .. ' ' .. who)
    redis.call('PEXPIRE', polls, entry_ttl)
  end
end

-- hold records the holder's times; fresh for a new hold.
local function hold(fresh)
  if held then
    local since = now
    if not fresh then
      local v = redis.call('HGET', held, token)
      since = v and string.match(v, '^(%d+) ') or '0'
    end
    redis.call('HSET', held, token, since .. ' ' .. now)
    redis.call('PEXPIRE', held, lease)
  end
end

if redis.call('SET', lock, token, 'NX', 'PX', lease) then
  hold(true)
  granted()
  return {1, tonumber(lease)}
end
local kind = redis.call('TYPE', lock)['ok']
if kind == 'string' and redis.call('GET', lock) == token then
  redis.call('PEXPIRE', lock, lease)
  hold(false)
  granted()
  return {1, tonumber(lease)}
end
polled(token)
record('r')
return {0, redis.call('PTTL', lock)}
