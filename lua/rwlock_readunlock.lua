-- rwlock_runlock: release one read hold level of a read-write lock.
--
-- KEYS[1]  lock hash: 'mode' = 'read' or 'write'; 'r:<owner>' = read holds
--          and 'w:<owner>' = write holds of each holder
-- KEYS[2]  the caller's read timeout key: its read lease
-- KEYS[3]  the prefix of every reader's timeout key (prefix .. owner id)
-- KEYS[4]  the writers' wake-up channel
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, re-armed while read holds remain
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  the read holds the caller expects before this unlock, or 0 for
--          any; a mismatch changes nothing (a retried unlock whose first
--          reply was lost must not release a second level)
-- ARGV[5]  the mark this copy names: for a release, the owner's latest
--          attempt's when it was sent; for a give-back, the attempt it
--          undoes ("0" names none). It changes nothing (-2)
--          when the read holds record a later attempt's mark ('@r:' ..
--          owner, see rwlock_readlock): a copy run late never releases
--          the owner's next read hold, nor a level taken since
--
-- Keys derived in the script: the timeout keys of the other readers are
-- KEYS[3] .. owner id, the one exception to "every key through KEYS": the
-- script must find the leases of readers it only knows from the hash. They
-- share the hash tag of KEYS[3], so they are in the same cluster slot.
--
-- When the caller's last read hold goes, the lock's expiry becomes the
-- longest remaining lease of the other readers, and readers whose lease has
-- run out are dropped from the hash; when no reader is left the lock is
-- deleted and one waiting writer per subscribed process is woken.
--
-- Returns {1, reads, writes}, the owner's hold counts afterwards; {-1} when
-- the owner holds no read lock (nothing changed); {-2} when its read holds
-- differ from ARGV[4] or the copy comes too late (ARGV[5]; nothing
-- changed).

local lock, timeout, prefix, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease, sharded, expect = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local named = tonumber(ARGV[5])
local rfield, wfield = 'r:' .. owner, 'w:' .. owner

local state = redis.call('hmget', lock, rfield, wfield, '@' .. rfield)
if not state[1] or redis.call('exists', timeout) == 0 then
  return {-1}
end
local reads, writes = tonumber(state[1]), tonumber(state[2] or 0)
-- A copy that names a mark below the one the hold records was sent before
-- the attempt that recorded it, one that took, re-entered or reported a
-- later hold or level: a late copy of an earlier release (or give-back),
-- which must not release what that attempt holds. A live release names
-- the owner's latest attempt and is never refused for this.
if expect > 0 and reads ~= expect or named > 0 and tonumber(state[3] or 0) > named then
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

redis.call('hdel', lock, rfield, '@' .. rfield)
redis.call('del', timeout)
if writes > 0 then
  return {1, 0, writes} -- the write holder dropped its own read hold
end

local longest = 0
for _, field in ipairs(redis.call('hkeys', lock)) do
  if string.sub(field, 1, 2) == 'r:' then
    local ttl = redis.call('pttl', prefix .. string.sub(field, 3))
    if ttl > 0 then
      longest = math.max(longest, ttl)
    else
      redis.call('hdel', lock, field, '@' .. field)
    end
  end
end
if longest > 0 then
  redis.call('pexpire', lock, longest)
  return {1, 0, 0}
end

redis.call('del', lock)
redis.call(sharded and 'spublish' or 'publish', channel, '1')
return {1, 0, 0}
