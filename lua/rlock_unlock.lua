-- rlock_unlock: release one level of a reentrant lock.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  unlock channel
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, re-armed while holds remain
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  the hold count the caller expects before this unlock, or 0 for
--          any; a mismatch changes nothing (a retried unlock whose first
--          reply was lost must not release a second level)
--
-- Returns the owner's remaining holds (0: the lock is free and one waiter
-- per subscribed process has been told so), -1 when the owner does not
-- hold the lock, -2 when the hold count differs from ARGV[4].

local lock, channel = KEYS[1], KEYS[2]
local owner, lease, sharded, expect = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])

local holds = redis.call('hget', lock, owner)
if not holds then
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
if sharded then
  redis.call('spublish', channel, '1')
else
  redis.call('publish', channel, '1')
end
return 0
