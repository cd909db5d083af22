-- unlock_channel() is Redisson's unlock channel of the script's local lock
-- (wire.UnlockChannel) and unlock_message Redisson's message on it
-- (wire.UnlockMessage); wake_channel() is the lock's hand-off channel
-- (wire.LockWakeChannel), named as its queue key (the local queue) with
-- "handoff" for "queue". Built here rather than sent: a call carries only
-- what its script cannot know, and these are needed only on a release.
local unlock_message = '0'
local function unlock_channel()
  if string.find(lock, '{', 1, true) then
    return 'redisson_lock__channel:' .. lock
  end
  return 'redisson_lock__channel:{' .. lock .. '}'
end
local function wake_channel()
  return string.sub(queue, 1, #queue - #lock - #'queue:') .. 'handoff:' .. lock
end
