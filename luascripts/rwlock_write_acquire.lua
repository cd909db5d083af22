-- rwlock_write_acquire: take or re-enter the write side of a Redisson
-- RReadWriteLock (layout in rwlock_read_acquire.lua) and count the attempt
-- in the lock's stats, in one step. Only a free lock, or one whose writer
-- is this owner, can be taken: readers (even this owner's own read levels)
-- exclude a writer, as in Redisson, where a reader asking for the write
-- lock waits until its read levels are gone.
--
-- KEYS[1] -> lock (HASH): mode, holder fields -> reentry counts
-- KEYS[2] -> stats of the lock (HASH), store.StatsKey(name)
-- KEYS[3] -> (optional) hold times (HASH), store.HeldKey(name): write field
--            -> "<acquired ms> <renewed ms>" (Redis time); a new hold records
--            both, a re-entry moves "renewed"
-- ARGV[1] -> lease in milliseconds (the lock's PEXPIRE; a re-entry only
--            ever raises the expiry)
-- ARGV[2] -> write field "<uuid>:<owner>:write"
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
-- Returns:
--   nil     -> taken (new hold or re-entry). Counted "a".
--   integer -> readers or another writer have it: its PTTL in ms (-1 when
--              the key has no expiry). Counted "r".
--   error   -> "WRONGTYPE ...": KEYS[1] is not a read-write lock (another
--              type, or a hash without a valid mode). Counted "e".
local lock = KEYS[1]
local stats = KEYS[2]
local lease = tonumber(ARGV[1])
local write_field = ARGV[2]
local held = KEYS[3]
local waited = tonumber(ARGV[3] or '') or 0
local poll_id = ARGV[4] or ''
local poll_ttl = ARGV[5]
local polls = KEYS[4]

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Hold times beside the lock, one field per holder field: a new hold
-- records its acquisition, a re-entry its renewal ("0" acquired when none
-- was kept). Like the lock's, their expiry is raised, never lowered,
-- except by the lock's first holder, who sets both.
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

local mode = redis.pcall('HGET', lock, 'mode')
if type(mode) == 'table' then
  record('e')
  return mode
end

if mode == false then
  if redis.call('EXISTS', lock) == 1 then
    record('e')
    return redis.error_reply('WRONGTYPE hash has no read-write lock mode')
  end
  redis.call('HSET', lock, 'mode', 'write', write_field, '1')
  redis.call('PEXPIRE', lock, lease)
  hold(write_field, true, true)
  granted()
  return nil
end

if mode ~= 'read' and mode ~= 'write' then
  record('e')
  return redis.error_reply('WRONGTYPE hash has an unknown read-write lock mode')
end

if mode == 'write' and redis.call('HEXISTS', lock, write_field) == 1 then
  redis.call('HINCRBY', lock, write_field, '1')
  if redis.call('PTTL', lock) < lease then
    redis.call('PEXPIRE', lock, lease)
  end
  hold(write_field, false, false)
  granted()
  return nil
end

polled(write_field)
record('r')
return redis.call('PTTL', lock)
