-- rlock_unlock: release one level of a reentrant lock; at the last level,
-- grant it to the first live waiter in line.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  waiter deadlines (zset, server time in milliseconds)
-- KEYS[4]  fencing counter: a grant takes its next value if it exists
-- KEYS[5]  the lock's release channel, for those who watch the lock
--          without standing in line (a group of locks, older clients)
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, re-armed while holds remain
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  the hold count the caller expects before this unlock, or 0 for
--          any; a mismatch changes nothing (a retried unlock whose first
--          reply was lost must not release a second level)
-- ARGV[5]  wake-up channel prefix: a waiter's channel is ARGV[5] .. owner id
--          (internal.Names.WaiterChannel; built here because the grantee
--          is only known inside the script, and in the lock's slot)
-- ARGV[6]  grant lease in milliseconds
--
-- A grant pops waiters off the line until one whose deadline (server
-- clock, TIME) has not passed, makes it the holder with one level and the
-- grant lease, takes the next fencing token when the counter exists (0
-- otherwise) and publishes "g" .. token .. ":" .. score on the waiter's
-- channel: the score in line that the waiter's last refused attempt set
-- (its deadline and the attempt's number, see rlock_acquire) names the
-- attempt the grant answers, so that a message read late is never taken
-- for a later attempt's grant. Waiters popped with a passed deadline
-- are dead and dropped. A release that leaves the lock free publishes
-- "1" on KEYS[5].
--
-- Returns {holds}: the owner's remaining holds (0: the lock was released
-- and nobody live was in line), -1 when the owner does not hold the lock,
-- -2 when the hold count differs from ARGV[4]; or {0, grantee, token,
-- deadline}
-- when the release granted the lock, so that a grantee in the releasing
-- process can complete its hold without waiting for the message. A
-- resent unlock whose first run went through finds the owner's field gone
-- ({-1}): it never releases the grantee's hold nor grants again.

local lock, queue, timeouts, fence, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, lease, sharded, expect = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local prefix, grantLease = ARGV[5], tonumber(ARGV[6])

local holds = redis.call('hget', lock, owner)
if not holds then
  return {-1}
end
holds = tonumber(holds)
if expect > 0 and holds ~= expect then
  return {-2}
end

if holds > 1 then
  redis.call('hincrby', lock, owner, -1)
  redis.call('pexpire', lock, lease)
  return {holds - 1}
end

redis.call('del', lock)
local now
while true do
  local head = redis.call('lpop', queue)
  if not head then
    redis.call(sharded and 'spublish' or 'publish', channel, '1')
    return {0}
  end
  local deadline = redis.call('zscore', timeouts, head)
  redis.call('zrem', timeouts, head)
  if not now then
    local t = redis.call('time')
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  if deadline and tonumber(deadline) > now then
    local token = 0
    if redis.call('exists', fence) == 1 then
      token = redis.call('incr', fence)
    end
    redis.call('hset', lock, head, 1)
    redis.call('pexpire', lock, grantLease)
    redis.call(sharded and 'spublish' or 'publish', prefix .. head, 'g' .. token .. ':' .. deadline)
    return {0, head, token, deadline}
  end
end
