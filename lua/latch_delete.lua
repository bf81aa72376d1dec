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
--
-- Returns 1 when the request deleted the count (now or in an earlier
-- run), 0 when the latch was at zero (nothing changed, no receipt).
-- A key of another type, or a string that is not a positive integer, is
-- a WRONGTYPE error and is left untouched.

local count, channel, receipt = KEYS[1], KEYS[2], KEYS[3]

local raw = redis.call('get', count)
if raw and not string.match(raw, '^[1-9]%d*$') then
  return redis.error_reply('WRONGTYPE the latch key does not hold a positive count')
end
if redis.call('exists', receipt) == 1 then
  return 1
end
if not raw then
  return 0
end
redis.call('del', count)
if ARGV[1] == '1' then
  redis.call('spublish', channel, '-1')
else
  redis.call('publish', channel, '-1')
end
redis.call('set', receipt, '1', 'px', ARGV[2])
return 1
