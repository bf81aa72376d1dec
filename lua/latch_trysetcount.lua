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
--
-- Returns 1 when the request set the count (now or in an earlier run), 0
-- when the latch already had a count (nothing changed). Setting a count
-- wakes nobody: waiters wait for zero. The count has no expiry.
-- A key of another type, or a string that is not a positive integer, is
-- a WRONGTYPE error, raised before anything is written.

local count, receipt = KEYS[1], KEYS[2]

local raw = redis.call('get', count)
if raw and not string.match(raw, '^[1-9]%d*$') then
  return redis.error_reply('WRONGTYPE the latch key does not hold a positive count')
end
if redis.call('exists', receipt) == 1 then
  return 1
end
if raw then
  return 0
end
redis.call('set', count, ARGV[1])
redis.call('set', receipt, '1', 'px', ARGV[2])
return 1
