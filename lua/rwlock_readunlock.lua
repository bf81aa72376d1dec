-- rwlock_readunlock: release the read level of a read-write lock's hold.
--
-- KEYS[1]  lock hash (see rwlock_writelock)
-- KEYS[2]  the hold's read timeout key: its read lease
-- KEYS[3]  the prefix of every reader's timeout key (prefix .. hold id)
-- KEYS[4]  the writers' wake-up channel
-- ARGV[1]  hold id
-- ARGV[2]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[3]  the tag of the read level (see rwlock_readlock)
--
-- A hold has one read level at a time (the handle counts its readers in
-- the process), which the id and tag name: a retry whose first copy went
-- through, or a copy that Redis runs late, finds it gone, or the level
-- the hold took again since under another tag, and changes nothing. (A
-- hold of an earlier release, whose field counts its read holds, is
-- released by its own process with that release's script.)
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
-- Returns {1, 0, writes}, the hold's levels afterwards; {-1} when the
-- id has no read level of that tag (nothing changed).

local lock, timeout, prefix, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, rfield = ARGV[1], 'r:' .. ARGV[1]

local state = redis.call('hmget', lock, rfield, 'w:' .. id)
if state[1] ~= ARGV[3] or redis.call('exists', timeout) == 0 then
  return {-1}
end
local writes = tonumber(state[2] or 0)

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
redis.pcall(ARGV[2] == '1' and 'spublish' or 'publish', channel, '1')
return {1, 0, 0}
