-- rwlock_readunlock: release one read level of a read-write lock's hold.
--
-- KEYS[1]  lock hash (see rwlock_writelock)
-- KEYS[2]  the hold's read timeout key: its read lease
-- KEYS[3]  the prefix of every reader's timeout key (prefix .. hold id)
-- KEYS[4]  the writers' wake-up channel
-- ARGV[1]  hold id
-- ARGV[2]  lease in milliseconds, re-armed while read levels remain
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  the read levels the caller expects the hold to have before
--          this release, or 0 for any; a mismatch changes nothing
--
-- A hold has one read level (the handle counts its readers in the
-- process, and releases the level with the last of them). A copy that
-- finds the id's read level gone changes nothing however late it runs.
-- A hold of an earlier version may count several (one per plain read
-- hold), which ARGV[4] keeps exact.
--
-- Keys derived in the script: the timeout keys of the other readers are
-- KEYS[3] .. hold id, the one exception to "every key through KEYS": the
-- script must find the leases of readers it only knows from the hash.
-- They share the hash tag of KEYS[3], so they are in the same cluster
-- slot.
--
-- When the hold's last read level goes, the lock's expiry becomes the
-- longest remaining lease of the other readers, and readers whose lease
-- has run out are dropped from the hash; when no reader is left the lock
-- is deleted and one waiting writer per subscribed process is woken.
--
-- Returns {1, reads, writes}, the hold's levels afterwards; {-1} when the
-- id has no read level (nothing changed); {-2} when its read levels
-- differ from ARGV[4] (nothing changed).

local lock, timeout, prefix, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, lease, expect = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4])
local rfield = 'r:' .. id

local state = redis.call('hmget', lock, rfield, 'w:' .. id)
if not state[1] or redis.call('exists', timeout) == 0 then
  return {-1}
end
local reads, writes = tonumber(state[1]), tonumber(state[2] or 0)
if expect > 0 and reads ~= expect then
  return {-2}
end

if reads > 1 then
  redis.call('hincrby', lock, rfield, -1)
  redis.call('pexpire', timeout, lease)
  if redis.call('pttl', lock) < lease then
    redis.call('pexpire', lock, lease)
  end
  return {1, reads - 1, writes}
end

redis.call('hdel', lock, rfield)
redis.call('del', timeout)
if writes > 0 then
  return {1, 0, writes} -- the write holder dropped its own read level
end

local longest = 0
for _, field in ipairs(redis.call('hkeys', lock)) do
  if string.sub(field, 1, 2) == 'r:' then
    local ttl = redis.call('pttl', prefix .. string.sub(field, 3))
    if ttl > 0 then
      longest = math.max(longest, ttl)
    else
      redis.call('hdel', lock, field)
    end
  end
end
if longest > 0 then
  redis.call('pexpire', lock, longest)
  return {1, 0, 0}
end

redis.call('del', lock)
redis.pcall(ARGV[3] == '1' and 'spublish' or 'publish', channel, '1')
return {1, 0, 0}
