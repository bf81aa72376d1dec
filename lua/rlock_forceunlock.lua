-- rlock_forceunlock: delete a reentrant lock whoever holds it, and wake a
-- waiter.
--
-- KEYS[1]  lock hash
-- KEYS[2]  unlock channel
-- ARGV[1]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- Returns 1 when a lock was deleted, 0 when there was none.
-- A key of another type, or a read-write lock's hash (it has a 'mode'
-- field) under the same name, raises WRONGTYPE and is left untouched.

local lock, channel = KEYS[1], KEYS[2]

if redis.call('hlen', lock) == 0 then
  return 0
end
if redis.call('hexists', lock, 'mode') == 1 then
  return redis.error_reply('WRONGTYPE the lock hash has a mode: the name is used by a read-write lock')
end
redis.call('del', lock)
if ARGV[1] == '1' then
  redis.call('spublish', channel, '1')
else
  redis.call('publish', channel, '1')
end
return 1
