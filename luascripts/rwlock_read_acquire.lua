-- rwlock_read_acquire: take or re-enter the read side of a Redisson
-- RReadWriteLock and count the attempt in the lock's stats, in one step.
--
-- Layout (Redisson's, so Java clients and the console share the lock): hash
-- <name> with "mode" = read|write and one field per holder, "<uuid>:<owner>"
-- for read levels and "<uuid>:<owner>:write" for write levels, each holding
-- its reentry count. Every read level n also has a string key
-- "{<name>}:<uuid>:<owner>:rwlock_timeout:<n>" with its own lease, so a
-- reader that died stops counting once its level keys run out.
--
-- Readers share the lock; a writer excludes other holders, but the writer's
-- own owner may also take read levels (and keeps them after its write
-- levels are gone, which turns the lock back into a read lock).
--
-- The key of the new level must travel in KEYS, so the caller names the
-- level it expects to create: ARGV[4] is the read count it believes the
-- holder has now. When Redis disagrees (another handle of the same owner
-- took or released a level meanwhile) nothing changes and the real count
-- comes back, for the caller to retry with the right key.
--
-- KEYS[1] -> lock (HASH): mode, holder fields -> reentry counts
-- KEYS[2] -> stats of the lock (HASH), store.StatsKey(name)
-- KEYS[3] -> the level key to create, "...:rwlock_timeout:<ARGV[4] + 1>"
-- KEYS[4] -> (optional) hold times (HASH), store.HeldKey(name): holder field
--            -> "<acquired ms> <renewed ms>" (Redis time); a new read holder
--            records both, a re-entry moves "renewed"
-- ARGV[1] -> lease in milliseconds (PEXPIRE of the level key; the lock's
--            expiry is raised to it, never lowered: other readers may hold
--            longer leases)
-- ARGV[2] -> read field "<uuid>:<owner>"
-- ARGV[3] -> write field of the same owner, "<uuid>:<owner>:write"
-- ARGV[4] -> the caller's idea of the current read count of ARGV[2]
-- ARGV[5] -> (optional) ms the caller has waited so far, measured by its
--            client since the first attempt of this wait; "0" or absent
--            for a first attempt. A grant with a wait records it in the
--            stats (layout in store/internal/wire/wire.go).
-- ARGV[6] -> (optional, with KEYS[5]) poll-waiter id of a waiting caller:
--            a failed attempt writes its entry in KEYS[5], the grant
--            deletes it
-- ARGV[7] -> (with ARGV[6]) lifetime of that entry in ms
-- KEYS[5] -> (optional) poll waiters (HASH), wire.PollWaitersKey(name):
--            id -> "<since ms> <deadline ms> <holder>"
--
-- Returns:
--   nil      -> taken (new level ARGV[4] + 1). Counted "a".
--   integer  -> a writer of another owner has it: its PTTL in ms (-1 when
--               the key has no expiry). Counted "r".
--   {count}  -> ARGV[4] was wrong: the real read count; nothing changed,
--               nothing counted.
--   error    -> "WRONGTYPE ...": KEYS[1] is not a read-write lock (another
--               type, or a hash without a valid mode). Counted "e".
local lock = KEYS[1]
local stats = KEYS[2]
local level_key = KEYS[3]
local lease = tonumber(ARGV[1])
local read_field = ARGV[2]
local write_field = ARGV[3]
local expected = tonumber(ARGV[4])
local held = KEYS[4]
local waited = tonumber(ARGV[5] or '') or 0
local poll_id = ARGV[6] or ''
local poll_ttl = ARGV[7]
local polls = KEYS[5]

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
    -- Someone's hash without a mode: Redisson would write into it; refuse.
    record('e')
    return redis.error_reply('WRONGTYPE hash has no read-write lock mode')
  end
  if expected ~= 0 then
    return {0}
  end
  redis.call('HSET', lock, 'mode', 'read', read_field, '1')
  redis.call('SET', level_key, '1', 'PX', lease)
  redis.call('PEXPIRE', lock, lease)
  hold(read_field, true, true)
  granted()
  return nil
end

if mode ~= 'read' and mode ~= 'write' then
  record('e')
  return redis.error_reply('WRONGTYPE hash has an unknown read-write lock mode')
end

if mode == 'read' or redis.call('HEXISTS', lock, write_field) == 1 then
  local count = tonumber(redis.call('HGET', lock, read_field)) or 0
  if count ~= expected then
    return {count}
  end
  redis.call('HINCRBY', lock, read_field, '1')
  redis.call('SET', level_key, '1', 'PX', lease)
  if redis.call('PTTL', lock) < lease then
    redis.call('PEXPIRE', lock, lease)
  end
  hold(read_field, count == 0, false)
  granted()
  return nil
end

polled(read_field)
record('r')
return redis.call('PTTL', lock)
