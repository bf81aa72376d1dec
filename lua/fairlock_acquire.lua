-- fairlock_acquire: take a fair (FIFO) lock, or wait in line.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  waiter deadlines: zset, member = owner id, score = the server
--          time in milliseconds after which the waiter counts as dead
-- KEYS[4]  fencing counter: the last token of the name, which expires a
--          lease (ARGV[2]) after it was taken; touched when ARGV[3] is "1" or "2",
--          or when a grant goes to a waiter that asked for fencing
-- KEYS[5]  the owner's place: a string holding the mark of its last refused
--          attempt (ARGV[9]), prefixed with "f" when a grant to it must
--          take a fencing token, and followed by "/" and the waiter's own
--          grant lease in milliseconds: the shorter of the grant lease and
--          its waiter timeout. The place lives that long from that attempt
--          (or from a later refresh), and a grant to the waiter lasts that
--          long, so that a waiter whose process died costs those behind it
--          no more than the waiter timeout it set.
-- KEYS[6]  with ARGV[12] only: the owner's value key, a string holding the
--          value of a candidate waiting in line (see ARGV[12])
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, and the fencing
--          counter's lifetime
-- ARGV[3]  "1": take the next fencing token on a first acquisition;
--          "2": as "1", and the handle gave its last hold up (lost, or
--          its release failed): a hold of the owner's found here that an
--          earlier attempt took is adopted with a new token (see
--          rlock_acquire)
-- ARGV[4]  unused ("0"): the caller holds nothing when it attempts, since
--          re-entry is counted in the process (see rlock_acquire)
-- ARGV[5]  waiter timeout in milliseconds: when the lock cannot be taken,
--          the owner joins the end of the line (or stays where it is) with
--          the deadline now + ARGV[5]; "0" never joins the line (TryLock)
-- ARGV[6]  wake-up channel prefix: a waiter's channel is ARGV[6] .. owner id
--          (the same name as internal.Names.WaiterChannel, in the same slot;
--          built here because the head is only known inside the script)
-- ARGV[7]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[8]  grant lease in milliseconds: the longest a grant lasts
-- ARGV[9]  the attempt's mark: a decimal integer higher than every
--          earlier mark of the owner, which a grant to it names
-- ARGV[10] place prefix: a waiter's place is the key ARGV[10] .. owner id
--          (built here for the head, in the slot of the declared keys)
-- ARGV[11] the attempt's deadline, server time in milliseconds: a copy
--          that runs after it (sent before a stall, run after it, when
--          its caller has given the attempt up) takes nothing, joins no
--          line and answers the error 'LATE <server time in ms>' (see
--          internal.RequestWindow); a deadline more than 10s
--          ahead of the server's clock (twice the window: the
--          client's clock is off) is refused the same way, so that a
--          client learns the server's time
-- ARGV[12] "" for a fair lock. For the leadership of an election (package
--          election), the channel on which every change of leader is
--          published, with "-1" (every observer of every process wakes).
--          The hash then also holds '@value', the leader's value: ARGV[13]
--          when the owner takes the lock, or the grantee's value key's
--          when the lock is granted (the key is deleted). A refused
--          blocking attempt stores ARGV[13] in KEYS[6] for as long as its
--          deadline in line (ARGV[5]), so that a grant to a waiter in line
--          finds its value.
-- ARGV[13] with ARGV[12]: the owner's value
-- ARGV[14] with ARGV[12]: value key prefix: a candidate's value key is
--          ARGV[14] .. owner id (built here for the head, in the slot of
--          the declared keys; read with pcall before anything changes, as
--          the head's place is)
--
-- First every waiter whose deadline has passed (server clock, the TIME
-- read for ARGV[11]) leaves the line. The lock goes to the owner only when it is free and nobody
-- waits before it: a newcomer never barges past the line. A lock found
-- free with another waiter first in line (its holder's or grantee's lease
-- ran out) is granted to that waiter as fairlock_unlock grants it, but
-- only if its place still exists: a head whose process has been silent
-- for longer than its grant lease (it died) is dropped first, so that dead
-- waiters do not hold the lock one grant lease after another.
--
-- An owner that holds the lock although the caller believes it holds
-- ARGV[4] levels (a lost reply, or a grant the caller has not completed)
-- is reported as holding, with its lease re-armed to ARGV[2].
--
-- Next to the owner's count, the hash keeps the field '@' .. owner: the
-- highest mark of an attempt that took or reported the hold
-- (or of the waiter attempt a grant answered), so that a release (which
-- names the handle's latest attempt) or a give-back (which names the
-- attempt it undoes) that Redis runs late, after a later attempt, changes
-- nothing (see fairlock_unlock). An attempt whose mark is below it ran late itself:
-- its caller has given up, so it changes nothing and is refused.
--
-- A fencing token is the larger of the counter + 1 and the server's clock
-- in microseconds, stored back as the counter and recorded in the hash's
-- field '@token' with the hold it belongs to (see rlock_acquire); a
-- repeated first acquisition reports it from there.
--
-- Returns 1 for a first acquisition without a token (meaning {1, 1, 0}:
-- the common case, and an integer costs Redis less than a table), else
-- {1, holds, token} when the owner holds the lock afterwards (token
-- is 0 without fencing; on a resend of the attempt that
-- took the hold it is the token the hold recorded, or a new one if it
-- recorded none: a hold taken by an older version; with ARGV[3] "2", a
-- hold taken by an earlier attempt takes a new token, as in
-- rlock_acquire), or {0, wait}: wait is the
-- holder's remaining lease (the grant lease of a grant this attempt made);
-- -1 when unknown. A blocking attempt's refusal is {0, wait, mark}:
-- ARGV[9], which a grant to it names (see fairlock_unlock).
-- A key of another type, or a read-write lock's hash (it has a 'mode'
-- field) under the same name, raises WRONGTYPE before anything is written;
-- so does an election's hash (it has '@value') under a fair lock's name,
-- and, under an election's name, a hash without '@value' (another lock's).

local lock, queue, timeouts, fence, place = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, lease = ARGV[1], tonumber(ARGV[2])
local fencing, anew = ARGV[3] == '1' or ARGV[3] == '2', ARGV[3] == '2'
local patience, prefix, sharded, grantLease = tonumber(ARGV[5]), ARGV[6], ARGV[7] == '1', tonumber(ARGV[8])
local mark, places = ARGV[9], ARGV[10]
local office, value, values = ARGV[12] or '', ARGV[13], ARGV[14]

local clock = redis.call('time')
local late = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if late > tonumber(ARGV[11]) or tonumber(ARGV[11]) - late > 10000 then
  return redis.error_reply(string.format('LATE %d', late))
end


-- takeToken takes the next fencing token (see above), stores it as the
-- counter for a lease, records it in the lock hash and returns it. A
-- token is written with %.0f, never tostring(): it has 16 digits, and Lua
-- prints 14.
local function takeToken(floor)
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = math.max((tonumber(redis.call('get', fence)) or 0) + 1, now, floor or 0)
  local digits = string.format('%.0f', token)
  redis.call('set', fence, digits, 'px', lease)
  redis.call('hset', lock, '@token', digits)
  return token
end

local state = redis.call('hmget', lock, owner, 'mode', '@' .. owner, '@value')
if state[2] then
  return redis.error_reply('WRONGTYPE the lock hash has a mode: the name is used by a read-write lock')
end
if office == '' and state[4] then
  return redis.error_reply('WRONGTYPE the lock hash has a value: the name is used by an election')
end
if office ~= '' and not state[4] and redis.call('exists', lock) == 1 then
  return redis.error_reply('WRONGTYPE the lock hash has no value: the name is used by another kind of lock')
end

-- publish tells every observer of an election that its leader changed.
local function publish()
  redis.call(sharded and 'spublish' or 'publish', office, '-1')
end
local held = state[1]
local first = redis.call('lindex', queue, 0)

-- The script runs at one instant: the clock read for the deadline is
-- the clock. (Reading the deadlines also when the line is empty is what
-- tells a timeouts key of another type, before anything is written.)
local now = late
local dead = redis.call('zrangebyscore', timeouts, '-inf', now)
for _, w in ipairs(dead) do
  redis.call('lrem', queue, 1, w)
end
if #dead > 0 then
  redis.call('zremrangebyscore', timeouts, '-inf', now)
end

if held and tonumber(mark) < tonumber(state[3] or 0) then
  return {0, redis.call('pttl', lock)} -- a late attempt
end
if held then
  -- The owner holds: a resend of the attempt that took the hold, a grant
  -- the caller has not completed, or a hold the handle gave up. Re-entry
  -- is counted in the process and never comes here: the script reports
  -- the hold, adds no level, and re-arms the lease, since the caller
  -- counts the hold's validity from this call.
  held = tonumber(held)
  local token = 0
  -- An attempt later than the one the hold records is no resend: the
  -- hold is one the handle gave up (lost, or its release failed). It
  -- becomes the caller's one level, whatever its count.
  local adopted = tonumber(mark) > tonumber(state[3] or 0)
  if anew and adopted then
    -- A new token, so that steps still under way under the hold given up
    -- are refused; above the hold's own token too: the counter may have
    -- expired (a hold lives longer than it) and the clock been set back.
    token = takeToken((tonumber(redis.call('hget', lock, '@token')) or 0) + 1)
    if office ~= '' then
      publish() -- a new term: observers hear of it as of any change
    end
  elseif fencing then
    token = tonumber(redis.call('hget', lock, '@token')) or takeToken()
  end
  if adopted then
    held = 1
    redis.call('hset', lock, owner, 1, '@' .. owner, mark)
  else
    redis.call('hset', lock, '@' .. owner, mark)
  end
  redis.call('pexpire', lock, lease)
  return {1, held, token}
end

-- PTTL tells a free lock (-2) and is the reply to a refused waiter; the
-- head is the first waiter unless the sweep above removed it.
local ttl = redis.call('pttl', lock)
local free = ttl == -2
local head = first
if #dead > 0 then
  head = redis.call('lindex', queue, 0)
end
-- A free lock passes to the head only if it is live: heads whose place
-- has lapsed leave the line. The live head's place is read and deleted
-- here, once: the lock is granted to that head below. (pcall: see
-- fairlock_unlock on places in a migrating slot; nothing but dead waiters
-- has changed yet. An election's candidate's value is read first, the same
-- way.)
local entry, headValue
while free and head and head ~= owner do
  if office ~= '' then
    headValue = redis.pcall('get', values .. head)
    if type(headValue) == 'table' then
      return redis.error_reply('TRYAGAIN the value of the candidate at the head of the line is not on this node: ' .. headValue.err)
    end
  end
  entry = redis.pcall('getdel', places .. head)
  if type(entry) == 'table' then
    return redis.error_reply('TRYAGAIN the place of the waiter at the head of the line is not on this node: ' .. entry.err)
  end
  if entry then
    break
  end
  redis.call('lpop', queue)
  redis.call('zrem', timeouts, head)
  head = redis.call('lindex', queue, 0)
end

if free and (not head or head == owner) then
  local token = 0
  if fencing then
    token = takeToken()
  end
  redis.call('hset', lock, owner, 1, '@' .. owner, mark)
  redis.call('pexpire', lock, lease)
  if head then
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, owner)
    redis.call('del', place)
  end
  if office ~= '' then
    redis.call('hset', lock, '@value', value)
    redis.call('del', KEYS[6])
    publish()
  end
  if token == 0 then
    return 1
  end
  return {1, 1, token}
end

if patience > 0 then
  -- ZADD counts a waiter new to the line: only then does it join the end.
  if redis.call('zadd', timeouts, now + patience, owner) == 1 then
    redis.call('rpush', queue, owner)
  end
  local own, ownLease = mark, math.min(patience, grantLease)
  if fencing then
    own = 'f' .. mark
  end
  redis.call('set', place, own .. '/' .. ownLease, 'px', ownLease)
  if office ~= '' then
    redis.call('set', KEYS[6], value, 'px', patience)
  end
  -- The line lives as long as its longest-lived waiter, so waiters that
  -- crash with nobody left to drop them leave no keys behind.
  local last = redis.call('zrange', timeouts, -1, -1, 'withscores')
  local expiry = math.ceil(tonumber(last[2]))
  redis.call('pexpireat', queue, expiry)
  redis.call('pexpireat', timeouts, expiry)
end

if patience == 0 then
  mark = 0
end
if not free then
  return {0, ttl, mark}
end
-- Free, with another live waiter first in line: grant it to that waiter,
-- for its own grant lease (see KEYS[5]; at most ARGV[8]).
redis.call('lpop', queue)
redis.call('zrem', timeouts, head)
local granted, headLease = string.match(entry, '^f?([^/]*)/?(.*)$')
headLease = math.min(grantLease, tonumber(headLease) or grantLease)
local token = 0
if string.sub(entry, 1, 1) == 'f' then
  token = takeToken()
end
redis.call('hset', lock, head, 1, '@' .. head, granted)
if office ~= '' then
  redis.call('hset', lock, '@value', headValue or '')
  redis.call('del', values .. head)
end
redis.call('pexpire', lock, headLease)
redis.call(sharded and 'spublish' or 'publish', prefix .. head, string.format('g%.0f:%s', token, granted))
if office ~= '' then
  publish()
end
return {0, headLease, mark}
