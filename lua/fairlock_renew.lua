-- fairlock_renew: extend the lease of a fair lock if the owner holds it.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  waiter deadlines (zset, server time in milliseconds)
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds
-- ARGV[3]  wake-up channel prefix: a waiter's channel is ARGV[3] .. owner id
-- ARGV[4]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- First every waiter whose deadline has passed (server clock, TIME) leaves
-- the line; if that gives a free lock a new head, the head is woken.
--
-- Returns 1 when the lease was extended. When the owner no longer holds
-- the lock (nothing else changed): the owner id of whoever holds it now,
-- or 0 when nobody does. The hash's other fields start with '@' (marks,
-- the fencing token); an owner id never does.

local lock, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local owner, lease, prefix, sharded = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4] == '1'

local held = redis.call('hexists', lock, owner) == 1
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

if held then
  redis.call('pexpire', lock, lease)
  return 1
end

for _, field in ipairs(redis.call('hkeys', lock)) do
  if string.sub(field, 1, 1) ~= '@' then
    return field
  end
end
local head = redis.call('lindex', queue, 0)
if head and head ~= first and redis.call('exists', lock) == 0 then
  if sharded then
    redis.call('spublish', prefix .. head, '1')
  else
    redis.call('publish', prefix .. head, '1')
  end
end
return 0
