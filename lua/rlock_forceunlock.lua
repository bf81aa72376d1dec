-- rlock_forceunlock: delete a reentrant lock whoever holds it, and wake the
-- waiter first in line.
--
-- KEYS[1]  lock hash
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  receipt of this call: its first run's reply (see part aim)
-- KEYS[4]  the lock's release channel, for those who watch the lock
--          without standing in line (a group of locks, older clients)
-- ARGV[1]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[2]  receipt lifetime in milliseconds
-- ARGV[3]  wake-up channel prefix: a waiter's channel is ARGV[3] .. owner id
--          (built here because the head is only known inside the script)
-- ARGV[4..] the aim: the holds the caller read and means to delete, as
--          their hold ids (none for a free lock)
--
-- A copy that finds other holds than the aimed ones (one that Redis runs
-- late, after the lock was taken again) changes nothing (see part aim).
--
-- The woken waiter's attempt takes the free lock. A dead waiter woken
-- instead is no worse: every waiter in line attempts at least every
-- third of the grant lease.
--
-- Returns 1 when a lock was deleted, 0 when there was none, -1 when the
-- holds are not the ones aimed at (nothing changed).
-- A key of another type, or a read-write lock's hash (it has a 'mode'
-- field) under the same name, raises WRONGTYPE and is left untouched.

local lock, queue, receipt, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local sharded, ttl, prefix = ARGV[1] == '1', ARGV[2], ARGV[3]

local aim = 4
-- part: aim
if moded then
  return redis.error_reply('WRONGTYPE the lock hash has a mode: the name is used by a read-write lock')
end
if not aimed then
  return -1
end
if #fields == 0 then
  redis.call('set', receipt, 0, 'px', ttl)
  return 0
end
redis.call('del', lock)
local publish = sharded and 'spublish' or 'publish'
local head = redis.call('lindex', queue, 0)
if head then
  redis.pcall(publish, prefix .. head, '1')
end
redis.pcall(publish, channel, '1')
redis.call('set', receipt, 1, 'px', ttl)
return 1
