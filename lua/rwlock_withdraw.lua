-- rwlock_withdraw: withdraw a waiting writer's announcement from a
-- read-write lock, when the writer gives up waiting.
--
-- KEYS[1]  zset of announced waiting writers: member = owner id, score =
--          when the announcement lapses (server time, milliseconds)
-- KEYS[2]  the readers' wake-up channel
-- ARGV[1]  owner id
-- ARGV[2]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- When no live announcement is left, every waiting reader is woken: the
-- readers this writer was holding back may proceed.
--
-- Returns 1 when the owner was announced, 0 when it was not (nothing
-- changed).

local writers, channel = KEYS[1], KEYS[2]
local owner, sharded = ARGV[1], ARGV[2] == '1'

if redis.call('zrem', writers, owner) == 0 then
  return 0
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', writers, '-inf', now)
if redis.call('zcard', writers) == 0 then
  redis.call(sharded and 'spublish' or 'publish', channel, '-1')
end
return 1
