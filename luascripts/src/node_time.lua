-- node_time: the clock of the master that serves a key, read in that
-- master's share of a Cluster pipeline (store/inspect/internal/nodes).
--
-- KEYS[1] -> any key the master serves (only routes the call; not read)
-- ARGV: none
--
-- Returns {seconds, microseconds}: Redis TIME, as strings.
local clock = redis.call('TIME')
return {clock[1], clock[2]}
