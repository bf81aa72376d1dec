-- leased_acquire: take one permit of a leased semaphore under a permit id
-- chosen by the caller, with a lease on the server's clock.
--
-- KEYS[1]  acquired permits: zset of permit id -> expiry (ms, server clock)
-- KEYS[2]  total permits: a string integer, missing = 0, may be negative
-- KEYS[3]  notification channel
-- ARGV[1]  permit id
-- ARGV[2]  lease in milliseconds
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  the attempt's deadline, server time in milliseconds: a copy
--          that runs after it (sent before a stall, run after it, when
--          its caller has given the id up and may have released it)
--          takes nothing and answers the error 'LATE <server time in ms>'
--          (see exactly.RequestWindow); a deadline more than 10s
--          ahead of the server's clock (twice the window: the
--          client's clock is off) is refused the same way, so that a
--          client learns the server's time
--
-- Expired permits are returned to the pool first; if that leaves permits
-- available, waiters are notified with the count.
-- Returns {1, 0} when the id holds a permit afterwards (also when an earlier
-- run of the same request took it: its lease is then re-armed, since the
-- caller counts it from this call), or {0, wait} when no permit is
-- available: wait is the time in ms until the earliest acquired permit
-- expires, -1 when none is acquired; a third element is 0 when no total
-- was ever set, so that the waiter can say why it waits.
-- A total that is not an integer, or keys of another type, is a WRONGTYPE
-- error, raised before anything is written.

local leases, permits, channel = KEYS[1], KEYS[2], KEYS[3]
local id, lease, sharded, deadline = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])

-- part: permits
local window = 10000
-- part: late
local reclaimed = redis.call('zremrangebyscore', leases, '-inf', now)
local available = total - redis.call('zcard', leases)

if redis.call('zscore', leases, id) then
  -- A retry: the caller counts the lease from this call, not the lost one.
  redis.call('zadd', leases, now + lease, id)
  return {1, 0}
end

if available < 1 then
  local set = raw and 1 or 0
  local first = redis.call('zrange', leases, 0, 0, 'withscores')
  if first[2] then
    return {0, tonumber(first[2]) - now, set}
  end
  return {0, -1, set}
end

redis.call('zadd', leases, now + lease, id)
available = available - 1
if reclaimed > 0 and available > 0 then
  redis.pcall(sharded and 'spublish' or 'publish', channel, math.min(available, 1000000))
end
return {1, 0}
