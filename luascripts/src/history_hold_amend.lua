-- history_hold_amend: what the console heard of an ended hold after it was
-- written: how it really ended (evicted), or its holder working past its end.
--
-- KEYS[1] -> ended holds (LIST, web/history/keys.go's HoldsKey), newest
--            first, entries "<ended> [tokens] <from> <to> <len holder> ..."
-- ARGV[1] -> holder
-- ARGV[2] -> when it was heard, ms: the newest hold of holder begun by then
--            is amended
-- ARGV[3] -> how it ended, or "" to keep the entry's own
-- ARGV[4] -> "1": the holder worked on until ARGV[2] (an "L<ms>" token,
--            when past the hold's end); "0": the entry's own token stays
--
-- Returns 1 when an entry was amended, 0 when none is kept.
local ended = KEYS[1]
local holder = ARGV[1]
local at = tonumber(ARGV[2])
local how = ARGV[3]
local worked = ARGV[4] == '1'

for i, e in ipairs(redis.call('LRANGE', ended, '0', '-1')) do
  local verdict, rest = string.match(e, '^(%S+) (.*)$')
  local tokens, late = {}, nil
  while rest and string.match(rest, '^%a') do
    local tok, more = string.match(rest, '^(%S+) (.*)$')
    if not tok then
      break
    end
    if string.sub(tok, 1, 1) == 'L' then
      late = tok
    else
      tokens[#tokens + 1] = tok
    end
    rest = more
  end
  local from, to, lh, tail = string.match(rest or '', '^(%-?%d+) (%-?%d+) (%d+) %d+ %d+ %-?%d+ (.*)$')
  if from and string.sub(tail, 1, tonumber(lh)) == holder and #tail >= tonumber(lh) and tonumber(from) <= at then
    if how ~= '' then
      verdict = how
    end
    if worked and at > tonumber(to) then
      late = 'L' .. ARGV[2]
    end
    local lead = verdict .. ' '
    if late then
      lead = lead .. late .. ' '
    end
    for _, tok in ipairs(tokens) do
      lead = lead .. tok .. ' '
    end
    redis.call('LSET', ended, i - 1, lead .. rest)
    return 1
  end
end
return 0
