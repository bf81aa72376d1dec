-- rlock_leave: take a waiter out of the line of a reentrant lock, for a
-- Lock that gives up (its ctx ended or Redis failed).
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list: owner ids, oldest first
-- KEYS[3]  the owner's place in line (see rlock_acquire)
-- ARGV[1]  owner id
-- ARGV[2]  the mark of the wait's last attempt: every attempt of the wait
--          that is leaving has a mark no higher, every attempt of a later
--          wait of the owner a higher one
--
-- A place that holds a mark above ARGV[2] is a later wait's: this copy
-- ran late (sent before a stall, run after it, when the owner waits
-- again), and it changes nothing and returns 0.
--
-- A hold of the owner is not touched, not even one a release granted it
-- as it gave up: this script may run late (sent before a stall, run
-- after it), when a later Lock of the same owner holds the lock. It
-- reports such a grant instead; the caller, having read the reply (so
-- that no later Lock of its can have begun), gives it back.
--
-- Returns 1 when the owner was in line, 2 when it was not and holds one
-- level (a grant, if the caller holds nothing), 0 otherwise. Repeated, it
-- changes nothing.

local lock, queue, place = KEYS[1], KEYS[2], KEYS[3]
local owner, last = ARGV[1], tonumber(ARGV[2])

local at = redis.call('get', place)
if at and tonumber(string.match(at, '^f?(%d+)')) > last then
  return 0
end
if redis.call('del', place) == 1 then
  redis.call('lrem', queue, 1, owner)
  return 1
end
if redis.call('hget', lock, owner) == '1' then
  return 2
end
return 0
