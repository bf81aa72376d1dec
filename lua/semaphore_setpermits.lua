-- semaphore_setpermits: set the available permits of a counting semaphore
-- (SetPermits), or set them only if no count exists yet (TrySetPermits),
-- once per request.
--
-- KEYS[1]  permit count: a string integer
-- KEYS[2]  notification channel
-- KEYS[3]  receipt of this request, a string that expires: written when the
--          request sets the count, so that a repeated request (a retry
--          after a lost reply) reports success and changes nothing; it
--          must not undo the acquisitions made since, nor report that the
--          count it created already existed
-- KEYS[4..3+ARGV[6]] the keys other kinds of primitive keep under the
--          name (see part kind): a count is not created while one exists
-- KEYS[4+ARGV[6]..] receipts of earlier acquire requests of the handle
--          whose outcome it knows (settled), to delete: at most a few,
--          possibly none; they share the hash tag, so the slot, of KEYS[1]
-- ARGV[1]  the permits (>= 0)
-- ARGV[2]  "1": only if the count does not exist yet
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
-- Returns 1 when the request set the count (now or in an earlier run), 0
-- when ARGV[2] is "1" and a count already existed (nothing changed; the
-- receipt records that outcome too, and a copy reports it). When
-- the count grew, the notification carries the new count (capped at a
-- million): each process wakes at most that many waiters.
-- A permit count that is not an integer, or a key of another type, is a
-- WRONGTYPE error, raised before anything is written.

local permits, channel, receipt = KEYS[1], KEYS[2], KEYS[3]
local n, onlyNew, sharded = tonumber(ARGV[1]), ARGV[2] == '1', ARGV[3] == '1'
local ttl, deadline = ARGV[4], tonumber(ARGV[5])
local others, kinds = 4, tonumber(ARGV[6] or '0')

local raw = redis.call('get', permits)
if raw and not string.match(raw, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the semaphore key does not hold a permit count')
end
if not raw then
-- part: kind
end
-- Delete the settled receipts passed along; after the checks, so that an
-- error reply leaves everything as it was.
if #KEYS >= others + kinds then
  redis.call('del', unpack(KEYS, others + kinds))
end
local seen = redis.call('get', receipt)
if seen then
  return tonumber(seen)
end
local window = tonumber(ttl)
-- part: late
local old = 0
if raw then
  if onlyNew then
    redis.call('set', receipt, '0', 'px', deadline - now + ttl)
    return 0
  end
  old = tonumber(raw)
end

redis.call('set', permits, ARGV[1])
redis.call('set', receipt, '1', 'px', deadline - now + ttl)
if n > 0 and n > old then
  redis.pcall(sharded and 'spublish' or 'publish', channel, math.min(n, 1000000))
end
return 1
