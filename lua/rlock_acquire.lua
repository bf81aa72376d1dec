-- rlock_acquire: take a reentrant lock, or wait in line.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list: owner ids, oldest first
-- KEYS[3]  the owner's place in line: a string that lives as long as the
--          waiter counts as live, holding the mark of its last refused
--          attempt (ARGV[6]), prefixed with "f" when a grant to it must
--          take a fencing token
-- KEYS[4]  fencing counter: the last token of the name, which expires a
--          lease (ARGV[2]) after it was taken; touched when ARGV[3] is "1" or "2"
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds, and the fencing
--          counter's lifetime
-- ARGV[3]  "1": take the next fencing token on a first acquisition, and
--          have a grant to this waiter take one; "2": as "1", and the
--          handle gave its last hold up (lost: its watchdog could not
--          renew it in time; or its release failed): a hold of the
--          owner's found here that an earlier attempt took is adopted
--          with a new token
-- ARGV[4]  unused ("0"): the caller holds nothing when it attempts, since
--          re-entry is counted in the process. A hold of the owner found
--          here is a resend of the attempt that took it, a grant (see
--          rlock_unlock) the caller has not completed, or, when this
--          attempt's mark is later than the one the hold records, a hold
--          the handle gave up, taken on as the caller's one level
-- ARGV[5]  waiter timeout in milliseconds: when the lock is held by
--          another owner, the owner joins the end of the line (or keeps
--          its place) and its place lives ARGV[5] from now; "0" never
--          joins (TryLock). Every rlock waiter has the same timeout, so
--          the list lives as long as the newest place.
-- ARGV[6]  the attempt's mark: a decimal integer higher than every
--          earlier mark of the owner, which a grant to it names
-- ARGV[7]  the attempt's deadline, server time in milliseconds: a copy
--          that runs after it (sent before a stall, run after it, when
--          its caller has given the attempt up) takes nothing, joins no
--          line and answers the error 'LATE <server time in ms>' (see
--          internal.RequestWindow); a deadline more than 10s
--          ahead of the server's clock (twice the window: the
--          client's clock is off) is refused the same way, so that a
--          client learns the server's time
-- ARGV[8]  what else the caller knows, as letters (absent: "p"):
--          "p": the owner may have a place in line (an earlier attempt of
--          its wait was refused, or its outcome is unknown), which a
--          blocking first acquisition gives up; without it, the script
--          does not look for one: a wait's first attempt, the common
--          uncontended Lock, runs no DEL of a place that cannot exist.
--          "w": the handle has watchers (a group of locks, package
--          multilock) listening on the lock's release channel: an
--          attempt refused because another owner holds the lock marks
--          that hold with the field '@watched' (see rlock_unlock), so
--          that its release is published there.
--
-- Next to the owner's count, the hash keeps the field '@' .. owner: the
-- highest mark of an attempt that took or reported the hold
-- (or of the waiter attempt a grant answered). A release names the
-- handle's latest attempt when it was sent, a give-back the attempt it
-- undoes, and rlock_unlock changes nothing once a later attempt is
-- recorded there: a release or give-back that Redis runs late, after the
-- handle's next acquisition, never releases it. An attempt whose mark is below the
-- recorded one ran late itself, after a later attempt of its handle had
-- its reply: its caller has given up, so it changes nothing and is
-- refused.
--
-- A fencing token is the larger of the counter + 1 and the server's clock
-- (TIME) in microseconds, and is stored back as the counter: tokens keep
-- increasing while the counter lives, and, once it has expired or was lost
-- with Redis's data, as long as the server's clock has not been set back
-- by more than the time since the last token. The hold records its token
-- in the hash's field '@token', so that it lives exactly as long as the
-- hold, and a repeated first acquisition reports it from there.
--
-- A free lock goes to the caller, whoever waits: a newcomer may take a
-- lock it finds free (a release never leaves it free while a live waiter
-- is in line: it grants it to the first). The caller's own place in line,
-- if it may have one (ARGV[8]), is then given up. A place the caller did
-- not know of (left by a wait whose leave failed) stays until it lapses:
-- a release drops the releasing owner's own place when it pops it (see
-- rlock_unlock), as it does after a TryLock, which never looks.
--
-- Returns 1 for a first acquisition without a token (the common case:
-- an integer costs Redis less to make and send than a table, and means
-- {1, 1, 0}), else {1, holds, token} when the owner holds the lock
-- afterwards (token
-- is 0 without fencing; on a resend of the attempt that
-- took the hold it is the token the hold recorded, or a new one if it
-- recorded none: a hold taken by an older version, or a grant to an
-- earlier attempt of the caller's wait; when the caller holds nothing
-- (ARGV[4] 0), gave its last hold up (ARGV[3] "2") and the hold records
-- an earlier attempt's mark, it is a new token, higher than the hold's
-- earlier one, so that the steps of the hold given up are refused), or
-- {0, pttl} when another
-- owner holds it (pttl is -1 when the key has no expiry); a blocking
-- attempt's refusal is {0, pttl, mark}: ARGV[6], now stored in the
-- waiter's place, which a grant to it names (see rlock_unlock).
--
-- A place is a key of its own, with its own expiry, rather than a score
-- in a zset: the release checks a waiter's liveness and reads its mark
-- with one GETDEL, without reading the server's clock, and a dead
-- waiter's place disappears by itself. A waiter whose place expired
-- while its id stayed in the list joins the end again; the stale entry
-- is dropped when a release pops it, or grants the waiter its lock
-- early, never twice (the place is gone after the first).
-- A key of another type, a read-write lock's hash (it has a 'mode'
-- field) or an election's (it has '@value') under the same name, raises
-- WRONGTYPE before anything is written.

local lock, queue, place, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease = ARGV[1], tonumber(ARGV[2])
local fencing, anew = ARGV[3] == '1' or ARGV[3] == '2', ARGV[3] == '2'
local patience, mark = tonumber(ARGV[5]), ARGV[6]
local knows = ARGV[8] or 'p'
local placed = patience > 0 and string.find(knows, 'p', 1, true) ~= nil
local watched = string.find(knows, 'w', 1, true) ~= nil

local clock = redis.call('time')
local late = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if late > tonumber(ARGV[7]) or tonumber(ARGV[7]) - late > 10000 then
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

-- PTTL first: it tells a free lock (-2) from a held one and is the reply
-- to a waiter.
local ttl = redis.call('pttl', lock)
if ttl == -2 then
  local token = 0
  if fencing then
    token = takeToken()
  end
  redis.call('hset', lock, owner, 1, '@' .. owner, mark)
  redis.call('pexpire', lock, lease)
  if placed and redis.call('del', place) == 1 then
    redis.call('lrem', queue, 1, owner)
  end
  if token == 0 then
    return 1
  end
  return {1, 1, token}
end

-- One HMGET reads the owner's count and mark and tells a read-write lock
-- (a hash with a mode field) and an election (a hash with a value) from
-- this kind.
local state = redis.call('hmget', lock, owner, 'mode', '@' .. owner, '@value')
if state[2] then
  return redis.error_reply('WRONGTYPE the lock hash has a mode: the name is used by a read-write lock')
end
if state[4] then
  return redis.error_reply('WRONGTYPE the lock hash has a value: the name is used by an election')
end
local held = state[1]
if held then
  if tonumber(mark) < tonumber(state[3] or 0) then
    return {0, ttl} -- a late attempt
  end
  -- The owner holds: this is a resend of the attempt that took the hold,
  -- a grant (see rlock_unlock) the caller has not completed, or a hold
  -- the handle gave up. Re-entry is counted in the process and never
  -- comes here. The script reports the hold and adds no level; it
  -- re-arms the lease all the same, since the caller counts the hold's
  -- validity from this call.
  held = tonumber(held)
  local token = 0
  -- An attempt later than the one the hold records is no resend: the
  -- hold is one the handle gave up (lost, or its release failed; a level
  -- of unknown outcome is given back before the handle's next attempt).
  -- It becomes the caller's one level, whatever its count.
  local adopted = tonumber(mark) > tonumber(state[3] or 0)
  if anew and adopted then
    -- A new token, so that steps still under way under the hold given
    -- up are refused; above the hold's own token too: the counter may
    -- have expired (a hold lives longer than it) and the clock been set
    -- back.
    token = takeToken((tonumber(redis.call('hget', lock, '@token')) or 0) + 1)
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

-- The '@watched' mark lives as long as the hold it is on: a watcher that
-- dies leaves nothing behind once that hold ends.
if watched then
  redis.call('hset', lock, '@watched', 1)
end
if patience > 0 then
  local entry = mark
  if fencing then
    entry = 'f' .. mark
  end
  -- SET ... GET finds no earlier place only for a waiter new to the line:
  -- only then does it join the end.
  if not redis.call('set', place, entry, 'px', patience, 'get') then
    redis.call('rpush', queue, owner)
  end
  redis.call('pexpire', queue, patience)
  return {0, ttl, mark}
end
return {0, ttl}
