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
--
-- Returns the count left after the request: 0 when it reached zero, and
-- also when the latch was at zero already (then nothing changed and no
-- receipt is written: a latch at zero leaves no key). Only the step to
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
if not raw then
  return 0
end
local left = redis.call('decr', count)
if left == 0 then
  redis.call('del', count)
  if ARGV[1] == '1' then
    redis.call('spublish', channel, '-1')
  else
    redis.call('publish', channel, '-1')
  end
end
redis.call('set', receipt, left, 'px', ARGV[2])
return left
