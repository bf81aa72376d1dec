-- semaphore_drain: take every available permit of a counting semaphore,
-- once per request.
--
-- KEYS[1]  permit count: a string integer, missing = 0, may be negative
-- KEYS[2]  receipt of this request, a string that expires: the number of
--          permits it took, written when it took some, so that a repeated
--          request (a retry after a lost reply) reports them instead of
--          draining what was released since
-- KEYS[3..] receipts of earlier acquire requests of the handle whose
--          outcome it knows (settled), to delete: at most a few, possibly
--          none; they share the hash tag, so the slot, of KEYS[1]
-- ARGV[1]  receipt lifetime in milliseconds
-- ARGV[2]  the request's deadline, server time in milliseconds (every copy
--          of the request carries the same): a run after it, or more
--          than a receipt lifetime before it, changes nothing and
--          answers the error 'LATE <server time in ms>'; a receipt
--          written lives a receipt lifetime past it, so that every
--          copy that runs in time finds it. However late a copy comes,
--          it cannot act twice (see exactly.RequestWindow).
--
-- Returns how many permits the request took; 0, changing nothing, when
-- none was available (the count is missing, zero or negative). Every
-- outcome is recorded in the receipt, 0 too, so that a copy run after
-- permits came back does not take them.
-- A permit count that is not an integer, or a key of another type, is a
-- WRONGTYPE error, and a count above 2^53 - 1, which a script's numbers
-- (doubles) do not hold exactly, an OUTOFRANGE error, both raised before
-- anything is written. (Only a give-back, semaphore_undo, takes a count
-- past that bound.)

local permits, receipt = KEYS[1], KEYS[2]

local raw = redis.call('get', permits)
if raw and not string.match(raw, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the semaphore key does not hold a permit count')
end
local seen = redis.call('get', receipt)
local available = tonumber(raw or '0')
if not seen and available > 9007199254740991 then
  return redis.error_reply('OUTOFRANGE the permit count is above 2^53 - 1 (9007199254740991)')
end
-- Delete the settled receipts passed along; after the checks, so that an
-- error reply leaves everything as it was.
if #KEYS >= 3 then
  redis.call('del', unpack(KEYS, 3))
end
if seen then
  return tonumber(seen)
end
local ttl, deadline = ARGV[1], tonumber(ARGV[2])
local window = tonumber(ttl)
-- part: late
available = math.max(available, 0)
if available > 0 then
  redis.call('set', permits, 0)
end
redis.call('set', receipt, available, 'px', deadline - now + ttl)
return available
