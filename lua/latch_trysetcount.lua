-- latch_trysetcount: give a count-down latch its count, only while it has
-- none (it is at zero), once per request.
--
-- KEYS[1]  the count: a string holding a positive integer; missing = zero
-- KEYS[2]  receipt of this request, a string that expires: written when
--          the request sets the count, so that a repeated request (a retry
--          after a lost reply) reports success instead of finding the
--          count it set, and changes nothing
-- ARGV[1]  the count, a positive integer (the caller checked it)
-- ARGV[2]  receipt lifetime in milliseconds
-- ARGV[3]  the request's deadline, server time in milliseconds (every copy
--          of the request carries the same): a run after it, or more
--          than a receipt lifetime before it, changes nothing and
--          answers the error 'LATE <server time in ms>'; a receipt
--          written lives a receipt lifetime past it, so that every
--          copy that runs in time finds it. However late a copy comes,
--          it cannot act twice (see exactly.RequestWindow).
--
-- Returns 1 when the request set the count (now or in an earlier run), 0
-- when the latch already had a count (nothing changed; the receipt
-- records that outcome too, so that a copy run after the latch reached
-- zero does not set a count nobody asked for). Setting a count
-- wakes nobody: waiters wait for zero. The count has no expiry.
-- A key of another type, or a string that is not a positive integer, is
-- a WRONGTYPE error, raised before anything is written.

local count, receipt = KEYS[1], KEYS[2]

local raw = redis.call('get', count)
if raw and not string.match(raw, '^[1-9]%d*$') then
  return redis.error_reply('WRONGTYPE the latch key does not hold a positive count')
end
local seen = redis.call('get', receipt)
if seen then
  return tonumber(seen)
end
local ttl, deadline = ARGV[2], tonumber(ARGV[3])
local window = tonumber(ttl)
-- part: late
if raw then
  redis.call('set', receipt, '0', 'px', deadline - now + ttl)
  return 0
end
redis.call('set', count, ARGV[1])
redis.call('set', receipt, '1', 'px', deadline - now + ttl)
return 1
