-- semaphore_undo: cancel an acquire request whose outcome is unknown (its
-- caller gave up while the script was in flight), giving back the permits
-- it took, if any.
--
-- KEYS[1]  permit count: a string integer
-- KEYS[2]  receipt of the request (see semaphore_acquire)
-- KEYS[3]  notification channel
-- KEYS[4..] receipts of earlier acquire requests of the handle whose
--          outcome it knows (settled), to delete: at most a few, possibly
--          none; they share the hash tag, so the slot, of KEYS[1]
-- ARGV[1]  receipt lifetime in milliseconds: as long as the request's,
--          since a copy of the request may still be on its way
-- ARGV[2]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[3]  the request's deadline, server time in milliseconds (every copy
--          of the request carries the same): a run after it, or more
--          than a receipt lifetime before it, changes nothing and
--          answers the error 'LATE <server time in ms>'; a receipt
--          written lives a receipt lifetime past it, so that every
--          copy that runs in time finds it. However late a copy comes,
--          it cannot act twice (see exactly.RequestWindow).
--
-- The receipt is marked cancelled ("x") either way, so that the request,
-- should it still arrive or be retried, takes nothing.
-- Returns the permits given back: 0 when the request had taken none.
-- A give-back is never refused: with releases since the request took its
-- permits, it may take the count above 2^53 - 1 (what a script's numbers,
-- doubles, hold exactly; INCRBY itself is exact). Acquisitions still
-- compare exactly then (see semaphore_acquire); releases and a drain are
-- refused until acquisitions bring the count back within the bound.

local permits, receipt, channel = KEYS[1], KEYS[2], KEYS[3]
local ttl, sharded, deadline = ARGV[1], ARGV[2] == '1', tonumber(ARGV[3])

-- Delete the settled receipts passed along.
if #KEYS >= 4 then
  redis.call('del', unpack(KEYS, 4))
end

local window = tonumber(ttl)
-- part: late
local seen = redis.call('get', receipt)
redis.call('set', receipt, 'x', 'px', math.max(deadline - now + ttl, redis.call('pttl', receipt)))
if not seen or seen == 'x' then
  return 0
end

local available = redis.call('incrby', permits, seen)
if available > 0 then
  redis.pcall(sharded and 'spublish' or 'publish', channel, math.min(available, 1000000))
end
return tonumber(seen)
