-- fairlock_leave: take a waiter out of the line of a fair lock, for a Lock
-- that gives up (its ctx ended or Redis failed), and give back a grant
-- that reached it meanwhile.
--
-- KEYS[1]  lock hash
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  waiter deadlines (zset, server time in milliseconds)
-- ARGV[1]  owner id
-- ARGV[2]  wake-up channel prefix: a waiter's channel is ARGV[2] .. owner id
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  "1": the caller holds no level; if the owner holds one level
--          in Redis, a release granted it the lock as it gave up: release
--          that level
--
-- First every waiter whose deadline has passed (server clock, TIME) leaves
-- the line. When the lock is free afterwards and waiters are in line, the
-- first is woken: it may have the lock now, and nobody else would tell it.
-- A hold of the owner is otherwise not touched.
--
-- Returns 2 when a grant was given back, 1 when the owner was in line, 0
-- when it was neither. Repeated, it finds nothing to do.
-- A key of another type raises WRONGTYPE before anything is written.
local lock, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local owner, prefix, sharded, giveBack = ARGV[1], ARGV[2], ARGV[3] == '1', ARGV[4] == '1'
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('zrangebyscore', timeouts, '-inf', now)
for _, w in ipairs(dead) do
  redis.call('lrem', queue, 1, w)
end
if #dead > 0 then
  redis.call('zremrangebyscore', timeouts, '-inf', now)
end
local was = redis.call('lrem', queue, 1, owner)
redis.call('zrem', timeouts, owner)
if giveBack and redis.call('hget', lock, owner) == '1' then
  redis.call('del', lock)
  was = 2
end
local head = redis.call('lindex', queue, 0)
if head and redis.call('exists', lock) == 0 then
  if sharded then
    redis.call('spublish', prefix .. head, '1')
  else
    redis.call('publish', prefix .. head, '1')
  end
end
return was
