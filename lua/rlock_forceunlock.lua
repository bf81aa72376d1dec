-- rlock_forceunlock: delete a reentrant lock whoever holds it, and wake a
-- waiter.
--
-- KEYS[1]  lock hash
-- KEYS[2]  unlock channel
-- KEYS[3]  receipt of this call, a string that expires: the reply of its
--          first run, so that a repeated run (a retry after a lost reply)
--          reports what the first did instead of what it finds
-- ARGV[1]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[2]  receipt lifetime in milliseconds
--
-- Returns 1 when a lock was deleted, 0 when there was none.
-- A key of another type, or a read-write lock's hash (it has a 'mode'
-- field) under the same name, raises WRONGTYPE and is left untouched.

local lock, channel, receipt = KEYS[1], KEYS[2], KEYS[3]
local ttl = ARGV[2]

local seen = redis.call('get', receipt)
if seen then
  return tonumber(seen)
end

if redis.call('hlen', lock) == 0 then
  redis.call('set', receipt, 0, 'px', ttl)
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
redis.call('set', receipt, 1, 'px', ttl)
return 1
