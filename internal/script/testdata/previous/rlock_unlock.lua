-- rlock_unlock: release one level of a reentrant lock; at the last level,
-- grant it to the first live waiter in line.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list: owner ids, oldest first
-- KEYS[3]  fencing counter: a grant to a waiter that asked for fencing
--          takes the next token (see rlock_acquire), and the counter then
--          lives ARGV[2] from now
-- KEYS[4]  the lock's release channel, for those who watch the lock
--          without standing in line (a group of locks): a release that
--          leaves the lock free publishes on it only when the hold is
--          marked '@watched' (see rlock_acquire), and a grant or a pass
--          carries the mark over to the next holder
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, re-armed while holds remain; the fencing
--          counter's lifetime
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  the hold count the caller expects before this unlock, or 0 for
--          any; a mismatch changes nothing (a retried unlock whose first
--          reply was lost must not release a second level)
-- ARGV[5]  wake-up channel prefix: a waiter's channel is ARGV[5] .. owner id
--          (internal.Names.WaiterChannel)
-- ARGV[6]  grant lease in milliseconds
-- ARGV[7]  place prefix: a waiter's place in line is the key ARGV[7] ..
--          owner id (see rlock_acquire)
-- ARGV[8]  waiter timeout in milliseconds: the longest a place lives
-- ARGV[9]  the mark this copy names: for a release, the owner's latest
--          attempt's when it was sent; for a give-back, the attempt it
--          undoes ("0" names none). It changes nothing (-2)
--          when the hold records a later attempt's mark (see
--          rlock_acquire), one that took or reported a hold after the
--          copy was sent: a copy run late (held back in the network while
--          a resend went through and the owner locked again) never
--          releases the owner's next hold, nor a level taken since
-- ARGV[10] for a release that passes the lock within the releasing
--          process, the owner id of the waiter it goes to, else "" (or
--          absent): at the last level that waiter becomes the holder
--          whatever its place in line (its process, the releaser's, is
--          alive and has let it go on already), and nothing is published
--          (it was told in the process); whatever the outcome, that
--          waiter leaves the line
-- ARGV[11] with ARGV[10], the mark of that waiter's last refused attempt,
--          recorded with its hold as a grant's is
-- ARGV[12..] without ARGV[10], the owner ids of the releasing process's
--          waiters, when its run of passes has ended (see
--          internal/hold.Transfer): the grant passes them over, keeping
--          their places in line, for the first live waiter of another
--          process, and goes to the first of them only when nobody else
--          live is in line
--
-- The grantee's channel and place are built here because the grantee is
-- only known inside the script; both carry the lock's hash tag, so the
-- place is in the slot of the declared keys, and Redis Cluster lets a
-- script use an undeclared key of its own slot. While that slot migrates,
-- Redis refuses the whole script with TRYAGAIN before it runs (among the
-- declared keys, the channel never exists, and a migrating slot refuses
-- a multi-key command that names an absent key), so the place is always
-- on this node. GETDEL is still called with pcall before anything of the
-- lock changes: should the cluster refuse it all the same, the popped
-- waiter goes back to the head (the list living as long as any place
-- can) and the script fails with TRYAGAIN, having changed nothing a
-- caller could tell (the waiters it dropped were dead).
--
-- A grant pops waiters off the line until one whose place still exists,
-- takes the place (GETDEL: a place that expired is a dead waiter, which
-- is dropped, as is the releasing owner's own place left by a Lock whose
-- leave failed), makes that waiter the holder with one level and the grant
-- lease, takes the next fencing token when its place asks for one (0
-- otherwise; the larger of the counter + 1 and the server's clock in
-- microseconds, recorded in the hash's field '@token' as rlock_acquire
-- records it) and publishes "g" .. token .. ":" .. mark on the waiter's
-- channel: the mark its last refused attempt stored in its place names
-- the attempt the grant answers, so that a message read late is never
-- taken for a later attempt's grant. A release that leaves the lock free
-- publishes "1" on KEYS[4] when a watcher marked the hold (nobody else
-- listens there: a PUBLISH to nobody still costs Redis a command, on
-- every uncontended Unlock). Waiters passed over (ARGV[12..]) are asked
-- whether they live with EXISTS, which leaves their places as they are,
-- and go back to the head of the line, in their order, once the grantee
-- is known.
--
-- Returns {holds}: the owner's remaining holds (0: the lock was released
-- and nobody live was in line; a bare 0 when the line was empty, the
-- common case, since an integer costs Redis less to make and send than
-- a table), -1 when the owner does not hold the lock
-- ({-1, to, 0, mark} when ARGV[10] holds it: a resend of a pass that went
-- through),
-- -2 when the hold count differs from ARGV[4] or the copy comes too late
-- (ARGV[9]; nothing changed); or {0, grantee, token,
-- mark} when the release granted the lock, so that a grantee in the
-- releasing process can complete its hold without waiting for the
-- message. A resent unlock whose first run went through finds the
-- owner's field gone ({-1}): it never releases the grantee's hold nor
-- grants again.

local lock, queue, fence, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease, sharded, expect = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local prefix, grantLease, places, patience = ARGV[5], tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local named = tonumber(ARGV[9])
local to, toMark = ARGV[10] or '', ARGV[11]

-- The waiter that a pass (ARGV[10]) names went on in its process: it is
-- no longer in line, whatever comes of the pass. Unless it has stood in
-- line again since: a place recording a later attempt than the pass
-- names (ARGV[11]) belongs to a wait that began after the pass was sent,
-- and a copy of the pass run late must not take that wait's place.
local function leaveLine()
  local at = redis.call('get', places .. to)
  if at and tonumber(string.match(at, '[%d.]+')) > tonumber(toMark) then
    return
  end
  redis.call('del', places .. to)
  redis.call('lrem', queue, 0, to)
end

local state = redis.call('hmget', lock, owner, '@' .. owner, '@watched')
local holds, watched = state[1], state[3]
if not holds then
  if to == '' then
    return {-1}
  end
  if redis.call('hexists', lock, to) == 1 then
    return {-1, to, 0, toMark} -- a resend of a pass that went through
  end
  leaveLine()
  return {-1}
end
holds = tonumber(holds)
-- A copy that names a mark below the one the hold records was sent before
-- the attempt that recorded it, one that took, re-entered or reported a
-- later hold or level: a late copy of an earlier release (or give-back),
-- which must not release what that attempt holds. A live release names
-- the owner's latest attempt and is never refused for this.
if expect > 0 and holds ~= expect or named > 0 and tonumber(state[2] or 0) > named then
  if to ~= '' then
    leaveLine()
  end
  return {-2}
end

if holds > 1 then
  redis.call('hincrby', lock, owner, -1)
  redis.call('pexpire', lock, lease)
  return {holds - 1}
end

if to ~= '' then
  -- The place first, with pcall, for the reason given above for GETDEL:
  -- nothing has changed when it fails.
  local gone = redis.pcall('del', places .. to)
  if type(gone) == 'table' and gone.err then
    return redis.error_reply('TRYAGAIN the place of the waiter passed the lock is not on this node yet: ' .. gone.err)
  end
  redis.call('lrem', queue, 0, to)
  redis.call('del', lock)
  redis.call('hset', lock, to, 1, '@' .. to, toMark)
  if watched then
    redis.call('hset', lock, '@watched', watched)
  end
  redis.call('pexpire', lock, grantLease)
  return {0, to, 0, toMark}
end

local publish = sharded and 'spublish' or 'publish'

-- Nobody in line, the uncontended case: the lock is free, and nothing
-- below (the passed-over waiters, the grant) has anything to do.
local head = redis.call('lpop', queue)
if not head then
  redis.call('del', lock)
  if watched then
    redis.call(publish, channel, '1')
  end
  return 0
end
local over, aside = {}, {}
for i = 12, #ARGV do
  over[ARGV[i]] = true
end

-- Puts the waiters passed over back at the head of the line, in order.
local function restore()
  for i = #aside, 1, -1 do
    redis.call('lpush', queue, aside[i])
  end
  if #aside > 0 then
    redis.call('pexpire', queue, patience)
  end
end

-- Takes the next fencing token (see rlock_acquire), stores it as the
-- counter for a lease and returns it. A token is written with %.0f, never
-- tostring(): it has 16 digits, and Lua prints 14.
local function takeToken()
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = math.max((tonumber(redis.call('get', fence)) or 0) + 1, now)
  redis.call('set', fence, string.format('%.0f', token), 'px', lease)
  return token
end

-- Makes the waiter whose place held entry the holder, and tells it.
local function grant(head, entry)
  local token, mark = 0, entry
  if string.sub(entry, 1, 1) == 'f' then
    token = takeToken()
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

while head do
  local entry
  if over[head] then
    entry = redis.pcall('exists', places .. head)
  else
    entry = redis.pcall('getdel', places .. head)
  end
  if type(entry) == 'table' and entry.err then
    redis.call('lpush', queue, head)
    restore()
    redis.call('pexpire', queue, patience)
    return redis.error_reply('TRYAGAIN the place of the waiter at the head of the line is not on this node yet: ' .. entry.err)
  end
  if over[head] then
    if entry == 1 then
      aside[#aside + 1] = head
    end
  elseif entry and head ~= owner then
    restore()
    return grant(head, entry)
  end
  head = redis.call('lpop', queue)
end

-- Nobody of another process is live in line: the first waiter passed
-- over, if any (its place exists: EXISTS said so in this script).
local first = table.remove(aside, 1)
if first then
  local entry = redis.call('getdel', places .. first)
  restore()
  return grant(first, entry)
end
redis.call('del', lock)
if watched then
  redis.call(publish, channel, '1')
end
return {0}
