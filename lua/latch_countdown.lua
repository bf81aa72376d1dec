-- latch_countdown: take one from a count-down latch's count, once per
-- request; the step to zero deletes the count and wakes every waiter.
--
-- KEYS[1]  the count: a string holding a positive integer; missing = zero
-- KEYS[2]  notification channel
-- KEYS[3]  receipt of this request, a string that expires: the count the
--          request left, written when it took one, so that a repeated
--          request (a retry after a lost reply) reports that count and
--          takes nothing more
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
-- Returns the count left after the request: 0 when it reached zero, and
-- also when the latch was at zero already (then nothing changed; the
-- receipt records that outcome too, so that a copy run after a new count
-- was set does not count it down). Only the step to
-- zero publishes, "-1": every waiter of every process is woken.
-- A key of another type, or a string that is not a positive integer, is
-- a WRONGTYPE error, raised before anything is written.

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
  redis.call('set', receipt, 0, 'px', deadline - now + ttl)
  return 0
end
local left = redis.call('decr', count)
if left == 0 then
  redis.call('del', count)
  redis.pcall(ARGV[1] == '1' and 'spublish' or 'publish', channel, '-1')
end
redis.call('set', receipt, left, 'px', deadline - now + ttl)
return left
