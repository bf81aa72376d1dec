-- fairlock_unlock: release one level of a fair lock; at the last level,
-- grant it to the first live waiter in line.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  waiter deadlines (zset, server time in milliseconds)
-- KEYS[4]  fencing counter: a grant takes its next value if it exists
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, re-armed while holds remain
-- ARGV[3]  the hold count the caller expects before this unlock, or 0 for
--          any; a mismatch changes nothing (a retried unlock whose first
--          reply was lost must not release a second level)
-- ARGV[4]  wake-up channel prefix: a waiter's channel is ARGV[4] .. owner id
-- ARGV[5]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[6]  grant lease in milliseconds
--
-- First every waiter whose deadline has passed (server clock, TIME) leaves
-- the line. A grant pops the first waiter, makes it the holder with one
-- level and the grant lease, takes the next fencing token when the
-- counter exists (0 otherwise) and publishes "g" .. token .. ":" ..
-- score on the waiter's channel (ARGV[4] .. head, built here because the
-- head is only known inside the script): the score in line that the
-- waiter's last refused attempt set (its deadline and the attempt's
-- number, see fairlock_acquire) names the attempt the grant answers. A
-- lock found free with waiters in line (its holder's lease ran out) is
-- granted the same way, whoever calls.
--
-- Returns {holds}: the owner's remaining holds (0: the lock was released
-- and nobody waited), -1 when the owner does not hold the lock, -2 when
-- the hold count differs from ARGV[3]; or {0, grantee, token, deadline} when this
-- release granted the lock, so that a grantee in the releasing process
-- can complete its hold without waiting for the message. A resent unlock
-- whose first run went through finds the owner's field gone ({-1}): it
-- never releases the grantee's hold nor grants again.
-- A key of another type raises WRONGTYPE before anything is written.
local lock, queue, timeouts, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease, expect = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local prefix, sharded, grantLease = ARGV[4], ARGV[5] == '1', tonumber(ARGV[6])

local holds = redis.call('hget', lock, owner)
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('zrangebyscore', timeouts, '-inf', now)
for _, w in ipairs(dead) do
  redis.call('lrem', queue, 1, w)
end
if #dead > 0 then
  redis.call('zremrangebyscore', timeouts, '-inf', now)
end

-- grant makes the first waiter in line, if any, the holder of the free
-- lock, and returns it and its token.
local function grant()
  local head = redis.call('lpop', queue)
  if not head then
    return nil, 0, 0
  end
  local deadline = redis.call('zscore', timeouts, head) or '0'
  redis.call('zrem', timeouts, head)
  local token = 0
  if redis.call('exists', fence) == 1 then
    token = redis.call('incr', fence)
  end
  redis.call('hset', lock, head, 1)
  redis.call('pexpire', lock, grantLease)
  redis.call(sharded and 'spublish' or 'publish', prefix .. head, 'g' .. token .. ':' .. deadline)
  return head, token, deadline
end

if not holds then
  if redis.call('exists', lock) == 0 then
    grant()
  end
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
local head, token, deadline = grant()
if head then
  return {0, head, token, deadline}
end
return {0}
