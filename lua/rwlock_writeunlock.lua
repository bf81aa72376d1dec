-- rwlock_writeunlock: release the write level of a read-write lock's hold.
--
-- KEYS[1]  lock hash (see rwlock_writelock)
-- KEYS[2]  the hold's read timeout key: its read lease
-- KEYS[3]  zset of announced waiting writers
-- KEYS[4]  the readers' wake-up channel
-- KEYS[5]  the writers' wake-up channel
-- KEYS[6]  zset of announced waiting readers: member = owner id, score =
--          when the announcement lapses (server time, milliseconds)
-- KEYS[7]  zset of the readers whose turn it is, same members and scores
-- ARGV[1]  hold id
-- ARGV[2]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- A hold takes the write level once at most (see rwlock_writelock), and
-- a hold id is never reused, so the id names the level exactly: a copy
-- that finds it gone (released, a retry after a lost reply, a give-back
-- run late, or expired) changes nothing, however late it runs, and never
-- touches a later hold of the same handle. There is no count to expect.
--
-- A hold that also has read levels stays a reader (a downgrade), and the
-- write level's fencing token ('@token') goes with it; otherwise the lock
-- is deleted. Either way every waiting reader and one waiting writer per
-- subscribed process are woken, and the writers' announcements are
-- cleared: the readers that waited behind this writer get their turn,
-- and writers still waiting announce themselves again with their next
-- attempt. The live announced readers (KEYS[6]) become the readers whose
-- turn it is (KEYS[7]), replacing an earlier turn: until each has come,
-- given up or lapsed, a new writer does not take the lock (see
-- rwlock_writelock), and they come in past the writers' new
-- announcements (see rwlock_readlock).
--
-- Returns {1, reads, 0}, the hold's levels afterwards; {-1} when the id
-- holds no write level (nothing changed).

local lock, timeout, writers, rchannel, wchannel = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local readers, turn = KEYS[6], KEYS[7]
local id = ARGV[1]

local state = redis.call('hmget', lock, 'mode', 'w:' .. id, 'r:' .. id)
if state[1] ~= 'write' or not state[2] then
  return {-1}
end
local reads = 0
if state[3] and redis.call('exists', timeout) == 1 then
  reads = 1
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
  redis.call('hdel', lock, 'w:' .. id, '@token')
  redis.call('hset', lock, 'mode', 'read')
  redis.call('pexpire', lock, redis.call('pttl', timeout))
else
  redis.call('del', lock)
end
local publish = ARGV[2] == '1' and 'spublish' or 'publish'
redis.pcall(publish, rchannel, '-1')
redis.pcall(publish, wchannel, '1')
return {1, reads, 0}
