-- fairlock_leave: take a waiter out of the line of a fair lock, for a Lock
-- that gives up (its ctx ended or Redis failed).
--
-- KEYS[1]  lock hash
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  waiter deadlines (zset, server time in milliseconds)
-- KEYS[4]  the owner's place (see fairlock_acquire)
-- KEYS[5]  for an election's candidate only: its value key (see
--          fairlock_acquire's ARGV[12]), deleted with its place
-- ARGV[1]  owner id
-- ARGV[2]  wake-up channel prefix: a waiter's channel is ARGV[2] .. owner id
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  the mark of the wait's last attempt: every attempt of the wait
--          that is leaving has a mark no higher, every attempt of a later
--          wait of the owner a higher one
--
-- A place that holds a mark above ARGV[4] is a later wait's: this copy
-- ran late (sent before a stall, run after it, when the owner waits
-- again), and it changes nothing and returns 0.
--
-- First every waiter whose deadline has passed (server clock, TIME) leaves
-- the line. When the line has a new head and the lock is free, the new head
-- is woken: it may have the lock now, and nobody else would tell it.
-- A hold of the owner is not touched, not even one a release granted it
-- as it gave up: this script may run late (sent before a stall, run
-- after it), when a later Lock of the same owner holds the lock. It
-- reports such a grant instead; the caller, having read the reply (so
-- that no later Lock of its can have begun), gives it back.
--
-- Returns 1 when the owner was in line, 2 when it was not and holds one
-- level (a grant, if the caller holds nothing), 0 otherwise.
-- A key of another type raises WRONGTYPE before anything is written.

local lock, queue, timeouts, place = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, prefix, sharded, last = ARGV[1], ARGV[2], ARGV[3] == '1', tonumber(ARGV[4])

local at = redis.call('get', place)
if at and tonumber(string.match(at, '^f?(%d+)')) > last then
  return 0
end

local first = redis.call('lindex', queue, 0)

local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('zrangebyscore', timeouts, '-inf', now)
for _, w in ipairs(dead) do
  redis.call('lrem', queue, 1, w)
end
if #dead > 0 then
  redis.call('zremrangebyscore', timeouts, '-inf', now)
end

local was = redis.call('lrem', queue, 1, owner)
redis.call('zrem', timeouts, owner)
redis.call('del', place)
if KEYS[5] then
  redis.call('del', KEYS[5])
end

local head = redis.call('lindex', queue, 0)
if head and head ~= first and redis.call('exists', lock) == 0 then
  if sharded then
    redis.call('spublish', prefix .. head, '1')
  else
    redis.call('publish', prefix .. head, '1')
  end
end
if was > 0 then
  return 1
end
if redis.call('hget', lock, owner) == '1' then
  return 2
end
return 0
