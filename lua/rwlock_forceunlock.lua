-- rwlock_forceunlock: delete a read-write lock whoever holds it, and wake
-- every waiter that may now proceed.
--
-- KEYS[1]  lock hash (see rwlock_writelock)
-- KEYS[2]  the prefix of every reader's timeout key (prefix .. hold id)
-- KEYS[3]  zset of announced waiting writers
-- KEYS[4]  the readers' wake-up channel
-- KEYS[5]  the writers' wake-up channel
-- KEYS[6]  receipt of this call: its first run's reply (see part aim)
-- KEYS[7]  zset of announced waiting readers
-- KEYS[8]  zset of the readers whose turn it is
-- ARGV[1]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[2]  receipt lifetime in milliseconds
-- ARGV[3..] the aim: the holds the caller read and means to delete, as
--          the hash's hold fields ('w:' or 'r:' and the hold id; none for
--          a free lock)
--
-- A copy that finds other holds than the aimed ones changes nothing (see
-- part aim). A late copy aimed at a free lock that finds it free clears the
-- announcements and the readers' turn, as it was sent to do; the waiters
-- it wakes announce themselves again with their next attempt.
--
-- Keys derived in the script: the readers' timeout keys are KEYS[2] ..
-- hold id, the one exception to "every key through KEYS": the script only
-- learns the readers from the hash. They share the hash tag of KEYS[2], so
-- they are in the same cluster slot.
--
-- Deletes the hash, every reader's timeout key, the writers' and readers'
-- announcements and the readers' turn; wakes every waiting reader and one
-- waiting writer per subscribed process.
--
-- Returns 1 when a lock was deleted, 0 when there was none (its waiters'
-- announcements and the readers' turn are deleted all the same), -1 when
-- the holds are not the ones aimed at (nothing changed).
-- A key of another type, or a hash without a mode (another primitive's
-- lock under the same name), raises WRONGTYPE and is left untouched.

local lock, prefix, writers, rchannel, wchannel, receipt = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local readers, turn = KEYS[7], KEYS[8]
local ttl = ARGV[2]

local aim = 3
-- part: aim
if #fields > 0 and not moded then
  return redis.error_reply('WRONGTYPE the lock hash has no mode: the name is used by another kind of lock')
end
if not aimed then
  return -1
end

local publish = ARGV[1] == '1' and 'spublish' or 'publish'
if #fields == 0 then
  -- A free lock may still hold waiters back: readers whose turn it is
  -- (a crashed one's for up to its patience) or announcements.
  if redis.call('del', writers, readers, turn) > 0 then
    redis.pcall(publish, rchannel, '-1')
    redis.pcall(publish, wchannel, '1')
  end
  redis.call('set', receipt, 0, 'px', ttl)
  return 0
end
for _, field in ipairs(fields) do
  if string.sub(field, 1, 2) == 'r:' then
    redis.call('del', prefix .. string.sub(field, 3))
  end
end
redis.call('del', lock, writers, readers, turn)
redis.pcall(publish, rchannel, '-1')
redis.pcall(publish, wchannel, '1')
redis.call('set', receipt, 1, 'px', ttl)
return 1
