-- fairlock_unlock: release one level of a fair lock; at the last level,
-- wake the waiter first in line.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  waiter deadlines (zset, server time in milliseconds)
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, re-armed while holds remain
-- ARGV[3]  the hold count the caller expects before this unlock, or 0 for
--          any; a mismatch changes nothing (a retried unlock whose first
--          reply was lost must not release a second level)
-- ARGV[4]  wake-up channel prefix: a waiter's channel is ARGV[4] .. owner id
-- ARGV[5]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- First every waiter whose deadline has passed (server clock, TIME) leaves
-- the line; if that gives a free lock a new head, the head is woken.
--
-- Returns the owner's remaining holds (0: the lock is free and the waiter
-- first in line, if any, has been woken on its own channel), -1 when the
-- owner does not hold the lock, -2 when the hold count differs from ARGV[3].
-- A key of another type raises WRONGTYPE before anything is written.

local lock, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local owner, lease, expect = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local prefix, sharded = ARGV[4], ARGV[5] == '1'

local holds = redis.call('hget', lock, owner)
local first = redis.call('lindex', queue, 0)

local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('zrangebyscore', timeouts, '-inf', now)
for _, w in ipairs(dead) do
  redis.call('lrem', queue, 1, w)
end
if #dead > 0 then
  redis.call('zremrangebyscore', timeouts, '-inf', now)
end

local function wake(head)
  if sharded then
    redis.call('spublish', prefix .. head, '1')
  else
    redis.call('publish', prefix .. head, '1')
  end
end

if not holds then
  local head = redis.call('lindex', queue, 0)
  if head and head ~= first and redis.call('exists', lock) == 0 then
    wake(head)
  end
  return -1
end
holds = tonumber(holds)
if expect > 0 and holds ~= expect then
  return -2
end

if holds > 1 then
  redis.call('hincrby', lock, owner, -1)
  redis.call('pexpire', lock, lease)
  return holds - 1
end

redis.call('del', lock)
local head = redis.call('lindex', queue, 0)
if head then
  wake(head)
end
return 0
