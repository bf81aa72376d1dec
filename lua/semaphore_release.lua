-- semaphore_release: add permits to a counting semaphore (Release and
-- AddPermits) once per request, and wake waiters when some are available
-- afterwards.
--
-- KEYS[1]  permit count: a string integer, missing = 0, may be negative
-- KEYS[2]  notification channel
-- KEYS[3]  receipt of this request, a string that expires: written when the
--          request adds its permits, so that a repeated request (a retry
--          after a lost reply) adds nothing
-- KEYS[4..3+ARGV[5]] the keys other kinds of primitive keep under the
--          name (see part kind): a count is not created while one exists
-- KEYS[4+ARGV[5]..] receipts of earlier acquire requests of the handle
--          whose outcome it knows (settled), to delete: at most a few,
--          possibly none; they share the hash tag, so the slot, of KEYS[1]
-- ARGV[1]  the permits to add, non-zero and at most 2^53 - 1 in magnitude
--          (the caller checked it); negative takes them away and may leave
--          the count below zero
-- ARGV[2]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[3]  receipt lifetime in milliseconds
-- ARGV[4]  the request's deadline, server time in milliseconds (every copy
--          of the request carries the same): a run after it, or more
--          than a receipt lifetime before it, changes nothing and
--          answers the error 'LATE <server time in ms>'; a receipt
--          written lives a receipt lifetime past it, so that every
--          copy that runs in time finds it. However late a copy comes,
--          it cannot act twice (see exactly.RequestWindow).
--
-- Returns the available count afterwards (also when an earlier run of the
-- same request added the permits). When permits were added and some are
-- available, the notification carries that count (capped at a million):
-- each process wakes at most that many of its waiters.
-- A permit count that is not an integer, or a key of another type, is a
-- WRONGTYPE error, and a count that the request would take beyond
-- 2^53 - 1 in magnitude (or finds beyond it) an OUTOFRANGE error, both
-- raised before anything is written: a script's numbers are doubles,
-- exact only within that bound, and a count beyond it could not be
-- compared or reported exactly.

local permits, channel, receipt = KEYS[1], KEYS[2], KEYS[3]
local delta, sharded, ttl, deadline = tonumber(ARGV[1]), ARGV[2] == '1', ARGV[3], tonumber(ARGV[4])
local max = 9007199254740991 -- 2^53 - 1
local others, kinds = 4, tonumber(ARGV[5] or '0')

local raw = redis.call('get', permits)
if raw and not string.match(raw, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the semaphore key does not hold a permit count')
end
local count = tonumber(raw or '0')
local done = redis.call('exists', receipt) == 1
if not raw and not done then
-- part: kind
end
-- With both terms within the bound, the sum is exact when it is within
-- it too, and comes out beyond it when it is beyond (rounding keeps the
-- order). A repeated request reports what its first run did instead.
if not done and (count > max or count < -max or count + delta > max or count + delta < -max) then
  return redis.error_reply('OUTOFRANGE the permit count would pass 2^53 - 1 (9007199254740991)')
end
-- Delete the settled receipts passed along; after the checks, so that an
-- error reply leaves everything as it was.
if #KEYS >= others + kinds then
  redis.call('del', unpack(KEYS, others + kinds))
end
if done then
  return count
end
local window = tonumber(ttl)
-- part: late

local available = redis.call('incrby', permits, ARGV[1])
redis.call('set', receipt, '1', 'px', deadline - now + ttl)
if delta > 0 and available > 0 then
  redis.pcall(sharded and 'spublish' or 'publish', channel, math.min(available, 1000000))
end
return available
