-- leased_available: count the available permits of a leased semaphore.
--
-- KEYS[1]  acquired permits: zset of permit id -> expiry (ms, server clock)
-- KEYS[2]  total permits: a string integer, missing = 0, may be negative
-- KEYS[3]  notification channel
-- ARGV[1]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- Expired permits are returned to the pool first; if that leaves permits
-- available, waiters are notified with the count.
-- Returns total minus acquired, which may be negative after the total was
-- reduced.
-- A total that is not an integer, or keys of another type, is a WRONGTYPE
-- error, raised before anything is written.

local leases, permits, channel = KEYS[1], KEYS[2], KEYS[3]
local sharded = ARGV[1] == '1'

-- part: permits
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local reclaimed = redis.call('zremrangebyscore', leases, '-inf', now)
local available = total - redis.call('zcard', leases)

if reclaimed > 0 and available > 0 then
  redis.pcall(sharded and 'spublish' or 'publish', channel, math.min(available, 1000000))
end
return available
