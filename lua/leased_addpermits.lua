-- leased_addpermits: add to (or, negative, take from) the total permits of a
-- leased semaphore, once per request.
--
-- KEYS[1]  acquired permits: zset of permit id -> expiry (ms, server clock)
-- KEYS[2]  total permits: a string integer, missing = 0, may be negative
-- KEYS[3]  notification channel
-- KEYS[4]  receipt of this request, a string that expires: written when the
--          request adds its permits, so that a repeated request (a retry
--          after a lost reply) adds nothing
-- KEYS[5..] the keys other kinds of primitive keep under the name (see
--          part kind): a total is not created while one exists
-- ARGV[1]  the permits to add, non-zero and at most 2^53 - 1 in magnitude
--          (the caller checked it)
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
-- Expired permits are returned to the pool first.
-- Returns the available count afterwards (total minus acquired; may be
-- negative), also when an earlier run of the same request added the
-- permits. When permits were added or reclaimed and some are available,
-- the notification carries that count (capped at a million).
-- A total that is not an integer, or keys of another type, is a WRONGTYPE
-- error, and a total that the request would take beyond 2^53 - 1 in
-- magnitude (or finds beyond it) an OUTOFRANGE error, both raised before
-- anything is written: a script's numbers are doubles, exact only within
-- that bound.

local leases, permits, channel, receipt = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local delta, sharded, ttl, deadline = tonumber(ARGV[1]), ARGV[2] == '1', ARGV[3], tonumber(ARGV[4])
local max = 9007199254740991 -- 2^53 - 1

local raw = redis.call('get', permits)
if raw and not string.match(raw, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the semaphore key does not hold a permit count')
end
local total = tonumber(raw or '0')
if not raw then
  local others, kinds = 5, #KEYS - 4
-- part: kind
end
local added = redis.call('exists', receipt) == 0
-- With both terms within the bound, the sum is exact when it is within
-- it too, and comes out beyond it when it is beyond (rounding keeps the
-- order). A repeated request reports what its first run did instead.
if added and (total > max or total < -max or total + delta > max or total + delta < -max) then
  return redis.error_reply('OUTOFRANGE the permit total would pass 2^53 - 1 (9007199254740991)')
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if added and (now > deadline or deadline - now > tonumber(ttl)) then
  return redis.error_reply(string.format('LATE %d', now))
end
local reclaimed = redis.call('zremrangebyscore', leases, '-inf', now)
if added then
  total = redis.call('incrby', permits, ARGV[1])
  redis.call('set', receipt, '1', 'px', deadline - now + ttl)
end
local available = total - redis.call('zcard', leases)

if ((added and delta > 0) or reclaimed > 0) and available > 0 then
  redis.pcall(sharded and 'spublish' or 'publish', channel, math.min(available, 1000000))
end
return available
