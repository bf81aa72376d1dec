-- fairlock_leave: take a waiter out of the line of a fair lock, for a Lock
-- that gives up (its ctx ended or Redis failed).
--
-- KEYS[1]  lock hash
-- KEYS[2]  waiter list: owner ids, oldest first
-- KEYS[3]  waiter deadlines (zset of owner ids, server time in ms)
-- KEYS[4]  the owner's place (see fairlock_acquire)
-- KEYS[5]  election only: the owner's value key, deleted with its place
-- ARGV[1]  the id of the hold the wait was for
-- ARGV[2]  wake-up channel prefix: a waiter's channel is ARGV[2] .. owner id
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- A place that names another id is a later wait's of the same handle:
-- this copy ran late (sent before a stall, run after it), and it changes
-- nothing. Without a place the owner's entry in line, if any, is left
-- alone too (it may be a later wait's): a waiter without a place is
-- passed by as dead. A hold of ARGV[1] is not released here: the caller
-- gives it back by id, which is safe whenever it runs (ids are never
-- reused).
--
-- Waiters whose deadline passed leave the line too. When that gives a
-- free lock a new head, it is woken: it may take the lock now, and nobody
-- else would tell it.
--
-- Returns 1 when the owner was in line for this hold, 2 when it was not
-- and the id holds the lock (a grant that reached the wait as it gave
-- up), 0 otherwise. Repeated, it changes nothing.
-- A key of another type raises WRONGTYPE before anything is written.

local lock, queue, timeouts, place = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id = ARGV[1]
local owner = string.match(id, '^(.*):')
-- part: later

local at = redis.call('get', place)
if at then
  -- A place of a later hold id of the handle (a higher number) is a later
  -- wait's: this copy ran late. This id's or an earlier one's is this
  -- wait's (it may have retired an id after an unknown outcome).
  if placedLater(at) then
    return 0
  end
elseif redis.call('hexists', lock, id) == 1 then
  return 2
else
  return 0
end

local first = redis.call('lindex', queue, 0)
-- part: prune
redis.call('lrem', queue, 1, owner)
redis.call('zrem', timeouts, owner)
redis.call('del', place)
if KEYS[5] then
  redis.call('del', KEYS[5])
end
local head = redis.call('lindex', queue, 0)
if head and head ~= first and redis.call('exists', lock) == 0 then
  redis.pcall(ARGV[3] == '1' and 'spublish' or 'publish', ARGV[2] .. head, '1')
end
return 1
