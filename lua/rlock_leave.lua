-- rlock_leave: take a waiter out of the line of a reentrant lock, for a
-- Lock that gives up (its ctx ended or Redis failed).
--
-- KEYS[1]  lock hash (see rlock_acquire)
-- KEYS[2]  waiter list: owner ids, oldest first
-- KEYS[3]  the owner's place in line (see rlock_acquire)
-- ARGV[1]  the id of the hold the wait was for
--
-- A place that names a later hold id of the same handle (a higher number)
-- is a later wait's: this copy ran late (sent before a stall, run after
-- it), and it changes nothing. One that names this id or an earlier one
-- (the wait retired an id after an attempt of unknown outcome) is this
-- wait's, and goes. A hold of ARGV[1] is not released here: the caller gives it
-- back by id, which is safe whenever it runs (ids are never reused).
--
-- Returns 1 when the owner was in line for this hold, 2 when it was not
-- and the id holds the lock (a grant that reached the wait as it gave
-- up), 0 otherwise. Repeated, it changes nothing.

local lock, queue, place = KEYS[1], KEYS[2], KEYS[3]
local id = ARGV[1]

local owner = string.match(id, '^(.*):')
-- part: later
local at = redis.call('get', place)
if at then
  if placedLater(at) then
    return 0 -- a later wait's place: this copy ran late
  end
  redis.call('del', place)
  redis.call('lrem', queue, 1, owner)
  return 1
end
if redis.call('hexists', lock, id) == 1 then
  return 2
end
return 0
