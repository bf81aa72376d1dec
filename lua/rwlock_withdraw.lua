-- rwlock_withdraw: withdraw a waiter's announcement from a read-write
-- lock, when the waiter gives up waiting.
--
-- KEYS[1]  zset of announced waiting writers: member = owner id, score =
--          when the announcement lapses (server time, milliseconds)
-- KEYS[2]  the readers' wake-up channel
-- KEYS[3]  zset of announced waiting readers, same members and scores
-- KEYS[4]  zset of the readers whose turn it is, same members and scores
-- KEYS[5]  the writers' wake-up channel
-- ARGV[1]  owner id: a handle waits for one hold at a time, so its
--          announcements name the handle, not the hold
-- ARGV[2]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[3]  "w" to withdraw a waiting writer, "r" a waiting reader
-- ARGV[4]  the withdrawal's deadline, server time in milliseconds: a copy
--          that runs after it (the owner may be waiting again), or with a
--          deadline more than 10s ahead of the server's clock, changes
--          nothing and answers 'LATE <server time in ms>' (see
--          part/late.lua)
--
-- When a writer leaves and no live writer's announcement is left, every
-- waiting reader is woken: the readers this writer was holding back may
-- proceed. When a reader leaves the readers' turn and ends it, waiting
-- writers are woken: the turn was holding them back. A hold is never
-- released here: the caller gives it back by id.
--
-- Returns 1 when the owner was announced, 0 when it was not (nothing
-- changed).

local writers, rchannel, readers, turn, wchannel = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, writer, deadline = ARGV[1], ARGV[3] == 'w', tonumber(ARGV[4])
local publish = ARGV[2] == '1' and 'spublish' or 'publish'

local window = 10000
-- part: late

if not writer then
  local waited = redis.call('zrem', readers, owner)
  if redis.call('zrem', turn, owner) == 1 then
    if redis.call('exists', turn) == 0 then
      redis.pcall(publish, wchannel, '1')
    end
    return 1
  end
  return waited
end

if redis.call('zrem', writers, owner) == 0 then
  return 0
end
redis.call('zremrangebyscore', writers, '-inf', now)
if redis.call('zcard', writers) == 0 then
  redis.pcall(publish, rchannel, '-1')
end
return 1
