-- announce(ch, msg) publishes msg on ch, and with SPUBLISH as well when the
-- script's local sharded says the deployment needs it (a Cluster of Redis
-- >= 7, where Redisson >= 3.22 waits with SSUBSCRIBE).
local function announce(ch, msg)
  redis.call('PUBLISH', ch, msg)
  if sharded then
    redis.call('SPUBLISH', ch, msg)
  end
end
