-- leased_release: give back one permit of a leased semaphore, and wake
-- waiters when permits are available afterwards.
--
-- KEYS[1]  acquired permits: zset of permit id -> expiry (ms, server clock)
-- KEYS[2]  total permits: a string integer, missing = 0, may be negative
-- KEYS[3]  notification channel
-- ARGV[1]  permit id
-- ARGV[2]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- Expired permits are returned to the pool first, so an expired id is no
-- longer held.
-- Returns 1 when the permit was released, 0 when the id held none (unknown,
-- expired or already released). When permits are available afterwards and
-- some were freed, the notification carries the available count.
-- A total that is not an integer, or keys of another type, is a WRONGTYPE
-- error, raised before anything is written.

local leases, permits, channel = KEYS[1], KEYS[2], KEYS[3]
local id, sharded = ARGV[1], ARGV[2] == '1'

-- part: permits
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local reclaimed = redis.call('zremrangebyscore', leases, '-inf', now)
local released = redis.call('zrem', leases, id)
local available = total - redis.call('zcard', leases)

if (released > 0 or reclaimed > 0) and available > 0 then
  redis.pcall(sharded and 'spublish' or 'publish', channel, math.min(available, 1000000))
end
return released
