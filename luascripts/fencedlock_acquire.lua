-- fencedlock_acquire: take or re-enter a Redisson RFencedLock and hand out
-- its next fencing token, counting the attempt in the lock's stats, in one
-- step.
--
-- Layout (Redisson's): the RLock hash <name> ("<uuid>:<owner>" -> reentry
-- count, PEXPIRE lease; released by lock_release.lua, "0" on
-- "redisson_lock__channel:{<name>}") plus the counter
-- "redisson_lock_token:{<name>}", INCRemented by every successful acquire,
-- re-entries included, as Redisson does, and never expired or deleted: the
-- guarded resource rejects any token below the last one it saw, so a holder
-- that lost the lock (lease ran out, force-unlock) cannot write after the
-- next one did.
--
-- Seeding: a missing token key (first use, or lost when Redis restarted
-- without persistence, or was failed over to a replica that had not got
-- it) is first SET to Redis TIME in microseconds, then INCRemented. Tokens
-- then keep growing across such a loss: the tokens handed out before it
-- were at most the older seed plus one per acquire since, which stays
-- below the new seed as long as the lock averaged fewer than a million
-- acquires a second and the server clock did not step back. The first
-- token of a new lock is therefore about 1.8e15, not 1; it fits a signed
-- 64-bit integer and a Lua/JSON double (below 2^53) for centuries.
--
-- Redisson compatibility: Redisson's RFencedLock only INCRs this key, so
-- its clients continue above a seeded value and the layout is unchanged.
-- A Redisson client that is the first to acquire after the key was lost
-- still starts again from 1 (it does not seed); mixed deployments that
-- need fencing across restarts must let a lockwarden client take the lock
-- first, or enable persistence.
--
-- KEYS[1] -> lock (HASH): "<uuid>:<owner>" -> reentry count
-- KEYS[2] -> fencing token (STRING counter), "redisson_lock_token:{<name>}"
-- KEYS[3] -> stats of the lock (HASH), store.StatsKey(name)
-- KEYS[4] -> (optional) hold times (HASH), store.HeldKey(name), as in
--            lock_acquire.lua: a new hold records "<now> <now>", a re-entry
--            keeps "acquired" and moves "renewed"
-- ARGV[1] -> lease in milliseconds (the lock's PEXPIRE)
-- ARGV[2] -> holder field "<uuid>:<owner>"
-- ARGV[3] -> (optional) ms this call has waited before this attempt, "0"
--            or absent when none of its attempts failed yet
--            (store/wait_clock.go); a grant after a wait adds it to the
--            stats bucket as lock_acquire.lua's record_wait does
--
-- Returns {taken, n}:
--   {1, token} -> taken (new hold or re-entry); token is this acquisition's
--                 (seeded from TIME when the key was missing).
--                 Counted "a", with the wait of ARGV[3] when above 0.
--   {0, pttl}  -> another holder has it: its PTTL in ms, -1 when the key has
--                 no expiry. Counted "r".
--   error      -> "WRONGTYPE ...": KEYS[1] is not a hash, or KEYS[2] not a
--                 counter. Counted "e"; nothing else changes.
local lock = KEYS[1]
local token_key = KEYS[2]
local stats = KEYS[3]
local lease = ARGV[1]
local holder = ARGV[2]
local held = KEYS[4]
local waited = tonumber(ARGV[3]) or 0

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

local mine = redis.pcall('HEXISTS', lock, holder)
if type(mine) == 'table' then
  record('e')
  return mine
end
if mine == 0 and redis.call('EXISTS', lock) == 1 then
  record('r')
  return {0, redis.call('PTTL', lock)}
end
-- The token first: a key that is not a counter fails here, before the lock
-- is touched. A missing key is seeded (see the header); the seed is built
-- as text so that no float formatting can round it.
if redis.call('EXISTS', token_key) == 0 then
  redis.call('SET', token_key, t[1] .. string.format('%06d', tonumber(t[2])))
end
local token = redis.pcall('INCR', token_key)
if type(token) == 'table' then
  record('e')
  return redis.error_reply('WRONGTYPE fencing token key does not hold a counter')
end
redis.call('HINCRBY', lock, holder, '1')
redis.call('PEXPIRE', lock, lease)
if held then
  local since = now
  if mine == 1 then
    local v = redis.call('HGET', held, holder)
    since = v and string.match(v, '^(%d+) ') or '0'
  end
  redis.call('HSET', held, holder, since .. ' ' .. now)
  redis.call('PEXPIRE', held, lease)
end
if waited > 0 then
  record_wait(waited)
else
  record('a')
end
return {1, token}
