-- fairlock_renew: extend the lease of a fair lock if the hold stands.
--
-- KEYS[1]  lock hash: field = hold id (see fairlock_acquire)
-- KEYS[2]  waiter list: owner ids, oldest first
-- KEYS[3]  waiter deadlines (zset of owner ids, server time in ms)
-- ARGV[1]  hold id
-- ARGV[2]  lease in milliseconds
-- ARGV[3]  wake-up channel prefix: a waiter's channel is ARGV[3] .. owner id
-- ARGV[4]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- Waiters whose deadline has passed leave the line first (a holder's
-- renewals keep the line clean while nobody else calls); when that gives
-- a free lock a new head, the head is woken.
--
-- Returns 1 when the lease was extended. When the hold is gone (nothing
-- else changed): the hold id of whoever holds the lock now, or 0 when
-- nobody does. The hash's other fields start with '@'; a hold id never
-- does.

local lock, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local id, lease = ARGV[1], tonumber(ARGV[2])

local held = redis.call('hexists', lock, id) == 1
local first = redis.call('lindex', queue, 0)
-- part: prune

if held then
  redis.call('pexpire', lock, lease)
  return 1
end
for _, field in ipairs(redis.call('hkeys', lock)) do
  if string.sub(field, 1, 1) ~= '@' then
    return field
  end
end
local head = redis.call('lindex', queue, 0)
if head and head ~= first and redis.call('exists', lock) == 0 then
  redis.pcall(ARGV[4] == '1' and 'spublish' or 'publish', ARGV[3] .. head, '1')
end
return 0
