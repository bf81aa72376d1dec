-- rlock_leave: take a waiter out of the line of a reentrant lock, for a
-- Lock that gives up (its ctx ended or Redis failed), and give back a
-- grant that reached it meanwhile.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  waiter deadlines (zset, server time in milliseconds)
-- ARGV[1]  owner id
-- ARGV[2]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[3]  wake-up channel prefix: a waiter's channel is ARGV[3] .. owner id
-- ARGV[4]  "1": the caller holds no level; if the owner holds one level
--          in Redis, a release granted it the lock as it gave up: release
--          that level and wake the waiter first in line, whose attempt
--          takes the free lock
--
-- A hold of the owner is otherwise not touched.
--
-- Returns 2 when a grant was given back, 1 when the owner was in line, 0
-- when it was neither. Repeated, it finds nothing to do.

local lock, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local owner, sharded, prefix, giveBack = ARGV[1], ARGV[2] == '1', ARGV[3], ARGV[4] == '1'

if redis.call('zrem', timeouts, owner) == 1 then
  redis.call('lrem', queue, 1, owner)
  return 1
end
if not giveBack or redis.call('hget', lock, owner) ~= '1' then
  return 0
end
redis.call('del', lock)
local head = redis.call('lindex', queue, 0)
if head then
  if sharded then
    redis.call('spublish', prefix .. head, '1')
  else
    redis.call('publish', prefix .. head, '1')
  end
end
return 2
