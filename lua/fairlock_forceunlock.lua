-- fairlock_forceunlock: delete a fair lock whoever holds it, and wake the
-- waiter first in line.
--
-- KEYS[1]  lock hash
-- KEYS[2]  waiter list: owner ids, oldest first
-- KEYS[3]  waiter deadlines (zset of owner ids, server time in ms)
-- KEYS[4]  receipt of this call: its first run's reply (see part aim)
-- ARGV[1]  wake-up channel prefix: a waiter's channel is ARGV[1] .. owner id
-- ARGV[2]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[3]  receipt lifetime in milliseconds
-- ARGV[4]  "" for a fair lock; for an election's leadership, the channel
--          on which every change of leader is published: a deletion
--          publishes "-1" there
-- ARGV[5..] the aim: the holds the caller read and means to delete, as
--          their hold ids (none for a free lock)
--
-- A copy that finds other holds than the aimed ones (one that Redis runs
-- late, after the lock was taken again) changes nothing (see part aim).
--
-- Waiters whose deadline has passed leave the line; the line itself is
-- kept: waiters keep their order. The head is woken whenever the lock is
-- free afterwards, so a force unlock also restarts a line whose wake-up
-- was lost.
--
-- Returns 1 when a lock was deleted, 0 when there was none, -1 when the
-- holds are not the ones aimed at (nothing changed).
-- A key of another type, or a read-write lock's hash (it has a 'mode'
-- field) under the same name, raises WRONGTYPE and is left untouched.

local lock, queue, timeouts, receipt = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publish, ttl, office = ARGV[2] == '1' and 'spublish' or 'publish', ARGV[3], ARGV[4]

local aim = 5
-- part: aim
redis.call('llen', queue) -- a WRONGTYPE here comes before anything is written
if moded then
  return redis.error_reply('WRONGTYPE the lock hash has a mode: the name is used by a read-write lock')
end
if not aimed then
  return -1
end

-- part: prune

local deleted = 0
if #fields > 0 then
  deleted = 1
  redis.call('del', lock)
  if office ~= '' then
    redis.pcall(publish, office, '-1')
  end
end
local head = redis.call('lindex', queue, 0)
if head then
  redis.pcall(publish, ARGV[1] .. head, '1')
end
redis.call('set', receipt, deleted, 'px', ttl)
return deleted
