-- leased_setpermits: set the total permits of a leased semaphore, acquired
-- ones included (SetPermits), or set it only if no total exists yet
-- (TrySetPermits), once per request.
--
-- KEYS[1]  acquired permits: zset of permit id -> expiry (ms, server clock)
-- KEYS[2]  total permits: a string integer
-- KEYS[3]  notification channel
-- KEYS[4]  receipt of this request, a string that expires: written when the
--          request sets the total, so that a repeated request (a retry
--          after a lost reply) reports success and changes nothing; it
--          must not undo the changes made since, nor report that the total
--          it created already existed
-- KEYS[5..] the keys other kinds of primitive keep under the name (see
--          part kind): a total is not created while one exists
-- ARGV[1]  the total (>= 0)
-- ARGV[2]  "1": only if the total does not exist yet
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  receipt lifetime in milliseconds
-- ARGV[5]  the request's deadline, server time in milliseconds (every copy
--          of the request carries the same): a run after it, or more
--          than a receipt lifetime before it, changes nothing and
--          answers the error 'LATE <server time in ms>'; a receipt
--          written lives a receipt lifetime past it, so that every
--          copy that runs in time finds it. However late a copy comes,
--          it cannot act twice (see exactly.RequestWindow).
--
-- Expired permits are returned to the pool first. The available count,
-- total minus acquired, may be negative after a reduction.
-- Returns 1 when the request set the total (now or in an earlier run), 0
-- when ARGV[2] is "1" and a total already existed (nothing changed; the
-- receipt records that outcome too, and a copy reports it). When
-- more permits are available afterwards than before, the notification
-- carries the available count (capped at a million).
-- A total that is not an integer, or keys of another type, is a WRONGTYPE
-- error, raised before anything is written.

local leases, permits, channel, receipt = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local onlyNew, sharded, ttl, deadline = ARGV[2] == '1', ARGV[3] == '1', ARGV[4], tonumber(ARGV[5])

-- part: permits
if not raw then
  local others, kinds = 5, #KEYS - 4
-- part: kind
end
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local seen = redis.call('get', receipt)
if not seen and (now > deadline or deadline - now > tonumber(ttl)) then
  return redis.error_reply(string.format('LATE %d', now))
end
local reclaimed = redis.call('zremrangebyscore', leases, '-inf', now)
local acquired = redis.call('zcard', leases)
local before = total - acquired
local set = 0
if seen then
  set = tonumber(seen)
elseif not (raw and onlyNew) then
  redis.call('set', permits, ARGV[1])
  total = tonumber(ARGV[1])
  set = 1
end
if not seen then
  redis.call('set', receipt, set, 'px', deadline - now + ttl)
end

local available = total - acquired
if available > 0 and (available > before or reclaimed > 0) then
  redis.pcall(sharded and 'spublish' or 'publish', channel, math.min(available, 1000000))
end
return set
