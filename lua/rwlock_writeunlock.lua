-- rwlock_unlock: release one write hold level of a read-write lock.
--
-- KEYS[1]  lock hash: 'mode' = 'read' or 'write'; 'r:<owner>' = read holds
--          and 'w:<owner>' = write holds of each holder
-- KEYS[2]  the caller's read timeout key: its read lease
-- KEYS[3]  zset of announced waiting writers
-- KEYS[4]  the readers' wake-up channel
-- KEYS[5]  the writers' wake-up channel
-- KEYS[6]  zset of announced waiting readers: member = owner id, score =
--          when the announcement lapses (server time, milliseconds)
-- KEYS[7]  zset of the readers whose turn it is, same members and scores
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, re-armed while write holds remain
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  the write holds the caller expects before this unlock, or 0 for
--          any; a mismatch changes nothing (a retried unlock whose first
--          reply was lost must not release a second level)
-- ARGV[5]  the mark this copy names: for a release, the owner's latest
--          attempt's when it was sent; for a give-back, the attempt it
--          undoes ("0" names none). It changes nothing (-2)
--          when the write holds record a later attempt's mark ('@w:'
--          .. owner, see rwlock_writelock): a copy run late never
--          releases the owner's next write hold, nor a level taken since
--
-- On the last write level, an owner that also holds read locks stays a
-- reader (a downgrade), and the write hold's fencing token ('@token', see
-- rwlock_writelock) goes with the write hold; otherwise the lock is
-- deleted. Either way every
-- waiting reader and one waiting writer per subscribed process are woken,
-- and the writers' announcements are cleared: the readers that waited
-- behind this writer get their turn, and writers still waiting announce
-- themselves again with their next attempt. The readers announced
-- (KEYS[6], the live ones) become the readers whose turn it is (KEYS[7]),
-- replacing an earlier turn: until each has come, given up or lapsed, a
-- new writer does not take the lock (see rwlock_writelock), and they
-- come in past the writers' new announcements (see rwlock_readlock).
--
-- Returns {1, reads, writes}, the owner's hold counts afterwards; {-1} when
-- the owner does not hold the write lock (nothing changed); {-2} when its
-- write holds differ from ARGV[4] or the copy comes too late (ARGV[5];
-- nothing changed).

local lock, timeout, writers, rchannel, wchannel = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local readers, turn = KEYS[6], KEYS[7]
local owner, lease, sharded, expect = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local named = tonumber(ARGV[5])
local rfield, wfield = 'r:' .. owner, 'w:' .. owner

local state = redis.call('hmget', lock, 'mode', wfield, '@' .. wfield)
if state[1] ~= 'write' or not state[2] then
  return {-1}
end
local writes = tonumber(state[2])
-- A copy that names a mark below the one the hold records was sent before
-- the attempt that recorded it, one that took, re-entered or reported a
-- later hold or level: a late copy of an earlier release (or give-back),
-- which must not release what that attempt holds. A live release names
-- the owner's latest attempt and is never refused for this.
if expect > 0 and writes ~= expect or named > 0 and tonumber(state[3] or 0) > named then
  return {-2}
end
local reads = 0
if redis.call('exists', timeout) == 1 then
  reads = tonumber(redis.call('hget', lock, rfield) or 0)
end

if writes > 1 then
  redis.call('hincrby', lock, wfield, -1)
  if redis.call('pttl', lock) < lease then
    redis.call('pexpire', lock, lease)
  end
  if reads > 0 then
    redis.call('pexpire', timeout, lease)
  end
  return {1, reads, writes - 1}
end

redis.call('del', writers, turn)
if redis.call('exists', readers) == 1 then
  local t = redis.call('time')
  redis.call('zremrangebyscore', readers, '-inf', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
  if redis.call('exists', readers) == 1 then
    redis.call('rename', readers, turn) -- keeps the TTL: the last announcement's
  end
end
if reads > 0 then
  redis.call('hdel', lock, wfield, '@' .. wfield, '@token')
  redis.call('hset', lock, 'mode', 'read')
  redis.call('pexpire', lock, redis.call('pttl', timeout))
else
  redis.call('del', lock)
end
local publish = sharded and 'spublish' or 'publish'
redis.call(publish, rchannel, '-1')
redis.call(publish, wchannel, '1')
return {1, reads, 0}
