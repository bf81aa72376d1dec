-- semaphore_undo: cancel an acquire request whose outcome is unknown (its
-- caller gave up while the script was in flight), giving back the permits
-- it took, if any.
--
-- KEYS[1]  permit count: a string integer
-- KEYS[2]  receipt of the request (see semaphore_acquire)
-- KEYS[3]  notification channel
-- ARGV[1]  receipt lifetime in milliseconds
-- ARGV[2]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- The receipt is marked cancelled ("x") either way, so that the request,
-- should it still arrive or be retried, takes nothing.
-- Returns the permits given back: 0 when the request had taken none.

local permits, receipt, channel = KEYS[1], KEYS[2], KEYS[3]
local ttl, sharded = ARGV[1], ARGV[2] == '1'

local seen = redis.call('get', receipt)
redis.call('set', receipt, 'x', 'px', ttl)
if not seen or seen == 'x' then
  return 0
end

local available = redis.call('incrby', permits, seen)
if available > 0 then
  if sharded then
    redis.call('spublish', channel, math.min(available, 1000000))
  else
    redis.call('publish', channel, math.min(available, 1000000))
  end
end
return tonumber(seen)
