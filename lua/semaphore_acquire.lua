-- semaphore_acquire: take n permits of a counting semaphore if that many are
-- available.
--
-- KEYS[1]  permit count: a string integer, missing = 0, may be negative
-- KEYS[2]  receipt of this request, a string that expires: the number of
--          permits once the request took them, "x" once it was cancelled
--          (see semaphore_undo); a repeated request reads it instead of
--          taking permits twice, so it must outlive every attempt of the
--          request: its caller deletes it (KEYS[3..] of a later script)
--          once the outcome is known, and the lifetime is a safety net
-- KEYS[3..] receipts of earlier acquire requests of the handle whose
--          outcome it knows (settled), to delete: at most a few, possibly
--          none; they share the hash tag, so the slot, of KEYS[1]
-- ARGV[1]  n, the permits wanted (>= 1, and at most 2^53 - 1: the caller
--          checked it). A count and n are compared as doubles; with n
--          within that bound the comparison is exact, also for a count
--          beyond it (which comes out at 2^53 or more, above any such n).
-- ARGV[2]  receipt lifetime in milliseconds (an hour: see above)
-- ARGV[3]  the request's deadline, server time in milliseconds (every copy
--          of the request carries the same): a run after it, or more
--          than a receipt lifetime before it, changes nothing and
--          answers the error 'LATE <server time in ms>'; a receipt
--          written lives a receipt lifetime past it, so that every
--          copy that runs in time finds it. However late a copy comes,
--          it cannot act twice (see exactly.RequestWindow).
--
-- Returns {1, available} when the request holds its n permits afterwards
-- (also when an earlier run of the same request took them), {0, available}
-- when fewer than n are available ({0, 0, 0} when no count was ever set:
-- the waiter can say why it waits), {-1, available} when the request was
-- cancelled (its caller must go on under a new receipt); available is the
-- count left.
-- A permit count that is not an integer, or a key of another type, is a
-- WRONGTYPE error, raised before anything is written.

local permits, receipt = KEYS[1], KEYS[2]
local n, ttl, deadline = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])

local raw = redis.call('get', permits)
local available = 0
if raw then
  if not string.match(raw, '^%-?%d+$') then
    return redis.error_reply('WRONGTYPE the semaphore key does not hold a permit count')
  end
  available = tonumber(raw)
end
-- Delete the settled receipts passed along; after the checks, so that an
-- error reply leaves everything as it was.
if #KEYS >= 3 then
  redis.call('del', unpack(KEYS, 3))
end

local seen = redis.call('get', receipt)
if seen then
  if seen == 'x' then
    return {-1, available}
  end
  return {1, available}
end
local window = tonumber(ttl)
-- part: late

if available < n then
  if raw then
    return {0, available}
  end
  return {0, available, 0}
end
available = redis.call('decrby', permits, ARGV[1])
redis.call('set', receipt, ARGV[1], 'px', deadline - now + ttl)
return {1, available}
