-- latch_delete: delete a count-down latch whatever its count, once per
-- request, and wake every waiter: they see zero.
--
-- KEYS[1]  the count: a string holding a positive integer; missing = zero
-- KEYS[2]  notification channel
-- KEYS[3]  receipt of this request, a string that expires: written when
--          the request deleted the count, so that a repeated request (a
--          retry after a lost reply) reports the deletion and does not
--          delete a count set since
-- ARGV[1]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[2]  receipt lifetime in milliseconds
-- ARGV[3]  the request's deadline, server time in milliseconds (every copy
--          of the request carries the same): a run after it, or more
--          than a receipt lifetime before it, changes nothing and
--          answers the error 'LATE <server time in ms>'; a receipt
--          written lives a receipt lifetime past it, so that every
--          copy that runs in time finds it. However late a copy comes,
--          it cannot act twice (see exactly.RequestWindow).
--
-- Returns 1 when the request deleted the count (now or in an earlier
-- run), 0 when the latch was at zero (nothing changed; the receipt
-- records that outcome too, so that a copy run after a new count was set
-- does not delete it).
-- A key of another type, or a string that is not a positive integer, is
-- a WRONGTYPE error and is left untouched.

local count, channel, receipt = KEYS[1], KEYS[2], KEYS[3]

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
if not raw then
  redis.call('set', receipt, '0', 'px', deadline - now + ttl)
  return 0
end
redis.call('del', count)
redis.pcall(ARGV[1] == '1' and 'spublish' or 'publish', channel, '-1')
redis.call('set', receipt, '1', 'px', deadline - now + ttl)
return 1
