-- rlock_unlock: release a reentrant lock's hold and grant the lock to the
-- first live waiter in line.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count (1: re-entry
--          is counted in the process), '@' .. owner the mark (see
--          rlock_acquire), '@token' the fencing token, '@watched' a
--          watcher's mark
-- KEYS[2]  waiter list: owner ids, oldest first
-- KEYS[3]  fencing counter: a grant to a waiter that asked for fencing
--          takes the next token, and the counter then lives ARGV[2]
-- KEYS[4]  the lock's release channel, for those who watch the lock
--          without standing in line (a group of locks): a release that
--          leaves the lock free publishes "1" on it when the hold is
--          marked '@watched', and a grant carries the mark over
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds: the fencing counter's lifetime
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  the hold count the caller expects, or 0 for any; a mismatch
--          changes nothing
-- ARGV[5]  wake-up channel prefix: a waiter's channel is ARGV[5] .. owner
--          id (internal.Names.WaiterChannel)
-- ARGV[6]  grant lease in milliseconds
-- ARGV[7]  place prefix: a waiter's place in line is the key ARGV[7] ..
--          owner id (see rlock_acquire)
-- ARGV[8]  waiter timeout in milliseconds: the longest a place lives
-- ARGV[9]  the mark this copy names: for a release, the owner's latest
--          attempt's when it was sent; for a give-back, the attempt it
--          undoes ("0" names none). It changes nothing (-2) when the hold
--          records a later attempt's mark: a copy run late (held back in
--          the network while a resend went through and the owner locked
--          again) never releases the owner's next hold
--
-- The grantee's channel and place are built here because the grantee is
-- only known inside the script; both carry the lock's hash tag, so the
-- place is in the slot of the declared keys. While that slot migrates,
-- Redis refuses the whole script with TRYAGAIN before it runs; GETDEL is
-- still called with pcall before anything of the lock changes, and should
-- the cluster refuse it, the popped waiter goes back to the head and the
-- script fails with TRYAGAIN, having changed nothing a caller could tell.
--
-- A grant pops waiters off the line until one whose place still exists
-- and takes the place (GETDEL: a place that expired is a dead waiter,
-- dropped, as is the releasing owner's own place left by a Lock whose
-- leave failed). It makes that waiter the holder with one level and the
-- grant lease, takes the next fencing token when the place asks for one
-- (its value starts with "f"), and publishes "g" .. token .. ":" .. mark
-- on the waiter's channel: the mark of the waiter's last refused attempt,
-- so that a message read late is never taken for a later attempt's grant.
--
-- Returns 0 when the lock was released and nobody was in line (the common
-- case: an integer costs Redis less than a table), {0} when it was
-- released and nobody live was in line, {0, grantee, token, mark} when it
-- was granted (a grantee of the releasing process completes its hold
-- without waiting for the message), {-1} when the owner does not hold the
-- lock (a resend whose first run went through finds this: it never
-- releases the grantee's hold nor grants again), {-2} when the hold count
-- differs from ARGV[4] or the copy comes too late (nothing changed).

local lock, queue, fence, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease, sharded, expect = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local prefix, grantLease, places, patience = ARGV[5], tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local named = tonumber(ARGV[9])

local state = redis.call('hmget', lock, owner, '@' .. owner, '@watched')
local holds, watched = state[1], state[3]
if not holds then
  return {-1}
end
if expect > 0 and tonumber(holds) ~= expect or named > 0 and tonumber(state[2] or 0) > named then
  return {-2}
end

local publish = sharded and 'spublish' or 'publish'
local function free(reply)
  redis.call('del', lock)
  if watched then
    redis.call(publish, channel, '1')
  end
  return reply
end

local head = redis.call('lpop', queue)
if not head then
  return free(0)
end
while head do
  local entry = redis.pcall('getdel', places .. head)
  if type(entry) == 'table' and entry.err then
    redis.call('lpush', queue, head)
    redis.call('pexpire', queue, patience)
    return redis.error_reply('TRYAGAIN the place of the waiter at the head of the line is not on this node yet: ' .. entry.err)
  end
  if entry and head ~= owner then
    local token, mark = 0, entry
    if string.sub(entry, 1, 1) == 'f' then
      -- The next fencing token, as rlock_acquire takes it; written with
      -- %.0f, never tostring(): it has 16 digits, and Lua prints 14.
      local t = redis.call('time')
      local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
      token = math.max((tonumber(redis.call('get', fence)) or 0) + 1, now)
      redis.call('set', fence, string.format('%.0f', token), 'px', lease)
      mark = string.sub(entry, 2)
    end
    redis.call('del', lock)
    redis.call('hset', lock, head, 1, '@' .. head, mark)
    if token > 0 then
      redis.call('hset', lock, '@token', string.format('%.0f', token))
    end
    if watched then
      redis.call('hset', lock, '@watched', watched)
    end
    redis.call('pexpire', lock, grantLease)
    redis.call(publish, prefix .. head, string.format('g%.0f:%s', token, mark))
    return {0, head, token, mark}
  end
  head = redis.call('lpop', queue)
end
return free({0})
