-- leased_renew: extend the lease of one acquired permit of a leased
-- semaphore, if it is still held.
--
-- KEYS[1]  acquired permits: zset of permit id -> expiry (ms, server clock)
-- KEYS[2]  total permits: a string integer, missing = 0, may be negative
-- KEYS[3]  notification channel
-- ARGV[1]  permit id
-- ARGV[2]  lease in milliseconds, from now
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- Expired permits are returned to the pool first (waiters are notified when
-- that leaves permits available), so an expired permit cannot be renewed.
-- Returns 1 when the lease was extended, 0 when the id holds no permit
-- (nothing changed).
-- A total that is not an integer, or keys of another type, is a WRONGTYPE
-- error, raised before anything is written.

local leases, permits, channel = KEYS[1], KEYS[2], KEYS[3]
local id, lease, sharded = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'

-- part: permits
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local reclaimed = redis.call('zremrangebyscore', leases, '-inf', now)

if reclaimed > 0 then
  local available = total - redis.call('zcard', leases)
  if available > 0 then
    redis.pcall(sharded and 'spublish' or 'publish', channel, math.min(available, 1000000))
  end
end

if not redis.call('zscore', leases, id) then
  return 0
end
redis.call('zadd', leases, 'xx', now + lease, id)
return 1
