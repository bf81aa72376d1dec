-- rlock_acquire: take a reentrant lock, or wait in line.
--
-- KEYS[1]  lock hash: field = the holder's hold id, value = 1 (re-entry
--          is counted in the process); '@token' the hold's fencing token,
--          '@watched' a watcher's mark (see rlock_unlock)
-- KEYS[2]  waiter list: owner ids (a hold id's handle part), oldest first
-- KEYS[3]  the owner's place in line, alive while the waiter is: ["f" (a
--          grant to it takes a token)] hold id "#" ARGV[7]
-- KEYS[4]  fencing counter: the name's last token, kept for a lease
-- KEYS[5..] keys other kinds keep under the name (see part kind)
-- ARGV[1]  hold id: "<owner id>:<n>", new for each wait, never reused
-- ARGV[2]  lease in milliseconds, and the fencing counter's lifetime
-- ARGV[3]  "1": take the next fencing token on a first acquisition, and
--          have a grant to this waiter take one
-- ARGV[4]  waiter timeout in milliseconds: when another hold has the
--          lock, the owner joins the end of the line (or keeps its place)
--          and its place lives ARGV[4] from now; "0" never joins (TryLock).
--          Every rlock waiter has the same timeout, so the list lives as
--          long as the newest place.
-- ARGV[5]  the attempt's deadline, server time in ms (see part late)
-- ARGV[6]  letters: "p": the owner may have a place in line (an earlier
--          attempt of its wait was refused, or its outcome is unknown),
--          which an acquisition gives up; without it the uncontended Lock
--          runs no DEL. "w": a group of locks (package multilock) listens
--          on the release channel: a refused attempt marks the holder's
--          hold '@watched', so that its release is published there.
-- ARGV[7]  the attempt's number, which a grant's message names
--
-- Hold ids are never reused, so a hold of ARGV[1] found here is this
-- wait's own: a resend of an attempt whose reply was lost, or a grant
-- (see rlock_unlock) the caller has not completed. It is reported as
-- held with its token, and its lease re-armed, since the caller counts
-- the hold's validity from this call. A hold the handle gave up has an
-- id of its own and is another owner's to this attempt: it is waited for.
--
-- A free lock goes to the caller, whoever waits: a release never leaves it
-- free while a live waiter is in line (it grants it to the first).
--
-- Returns 1 for a first acquisition without a token, the token (an
-- integer above 1) for a first acquisition with one (an integer costs
-- Redis less than a table), {1, 1, token} when the caller's hold was
-- there already (token 0 when it has none), or {0, pttl} when another
-- hold has the lock (pttl -1 when the key has no expiry). A read-write
-- lock's or an election's hash raises WRONGTYPE before anything is
-- written.

local lock, queue, place, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, lease, fencing = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'
local patience, knows = tonumber(ARGV[4]), ARGV[6] or 'p'
local deadline, window = tonumber(ARGV[5]), 10000
-- part: late

local ttl = redis.call('pttl', lock)
if ttl == -2 then
  local others, kinds = 5, #KEYS - 4
-- part: kind
-- part: token
  local token = 0
  if fencing then
    token = takeToken(clock, lock, fence, lease, id, 1)
  else
    redis.call('hset', lock, id, 1)
  end
  redis.call('pexpire', lock, lease)
  if patience > 0 and string.find(knows, 'p', 1, true) and redis.call('del', place) == 1 then
    redis.call('lrem', queue, 1, string.match(id, '^(.*):'))
  end
  if token == 0 then
    return 1
  end
  return token
end

local state = redis.call('hmget', lock, id, 'mode', '@value', '@token')
if state[2] then
  return redis.error_reply('WRONGTYPE the lock hash has a mode: the name is used by a read-write lock')
end
if state[3] then
  return redis.error_reply('WRONGTYPE the lock hash has a value: the name is used by an election')
end
if state[1] then
  redis.call('pexpire', lock, lease)
  return {1, 1, tonumber(state[4]) or 0}
end

-- The '@watched' mark lives as long as the hold it is on: a watcher that
-- dies leaves nothing behind once that hold ends.
if string.find(knows, 'w', 1, true) then
  redis.call('hset', lock, '@watched', 1)
end
-- The owner id is read from the hold id only here, and on a free lock
-- only to leave the line: the uncontended Lock does without.
local owner = string.match(id, '^(.*):')
-- part: later
if patience > 0 and not later() then
  local entry = (fencing and 'f' or '') .. id .. '#' .. (ARGV[7] or '0')
  -- SET ... GET finds no earlier place only for an owner new to the line:
  -- only then does it join the end. A place of a later wait of the handle
  -- is put back: this attempt ran late, after its wait gave up.
  local prev = redis.call('set', place, entry, 'px', patience, 'get')
  if not prev then
    redis.call('rpush', queue, owner)
  elseif placedLater(prev) then
    redis.call('set', place, prev, 'px', patience)
  end
  redis.call('pexpire', queue, patience)
end
return {0, ttl}
