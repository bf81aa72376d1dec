-- rwlock_lock: take the write lock of a read-write lock, or re-enter it.
--
-- KEYS[1]  lock hash: 'mode' = 'read' or 'write'; 'r:<owner>' = read holds
--          and 'w:<owner>' = write holds of each holder
-- KEYS[2]  zset of announced waiting writers: member = owner id, score =
--          when the announcement lapses (server time, milliseconds)
-- KEYS[3]  the caller's read timeout key: its read lease
-- KEYS[4]  zset of the readers whose turn it is (see rwlock_writeunlock):
--          member = owner id, score = when its announcement lapses
-- KEYS[5]  fencing counter: the last token of the name, which expires a
--          lease (ARGV[2]) after it was taken; touched when ARGV[7] is "1" or "2"
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds (a re-entry re-arms it, and the owner's
--          read lease with it)
-- ARGV[3]  the write holds the caller believes it has (0 for none); when
--          the owner already has a different count, this is a retry of an
--          attempt whose reply was lost: the script reports the current
--          state and adds no hold, but re-arms the leases all the same,
--          since the caller counts the hold's validity from this call. A
--          caller that holds none (0) with a later mark than the write
--          hold records retries nothing: it finds a write hold its handle
--          gave up, and takes it on as one level, whatever its count
-- ARGV[4]  "1": when refused, announce the caller as a waiting writer, so
--          that new readers wait behind it
-- ARGV[5]  how long an announcement lasts, in milliseconds; each attempt
--          renews it, and the waiter's client while it is parked
-- ARGV[6]  the attempt's mark: a decimal integer higher than every
--          earlier mark of the owner
-- ARGV[7]  "1": take a fencing token on a first write acquisition; "2":
--          as "1", and the handle gave its last hold up (lost, or its
--          release failed; see below)
-- ARGV[8]  the attempt's deadline, server time in milliseconds: a copy
--          that runs after it (sent before a stall, run after it, when
--          its caller has given the attempt up) takes nothing, announces
--          nobody and answers the error 'LATE <server time in ms>' (see
--          internal.RequestWindow); a deadline more than 10s
--          ahead of the server's clock (twice the window: the
--          client's clock is off) is refused the same way, so that a
--          client learns the server's time
-- ARGV[9]  the read holds the caller believes it has (absent: whatever
--          the owner has): "0" when it holds none, and then a read level
--          of the owner's found here is not the caller's but one of a
--          hold its handle gave up as lost, or whose release failed,
--          still standing in Redis. A write hold of the owner's that the
--          caller takes on (re-enters, or adopts after giving it up)
--          drops that level instead of reporting it: reported, it would
--          be a read level no caller releases, which the write release
--          would turn into a read hold the handle's watchdog renews for
--          as long as the handle lives. Under other owners' read holds it
--          is waited for as theirs are (it lapses with its lease),
--          rather than refused as an upgrade the caller never asked for.
--
-- Next to 'w:<owner>' the hash keeps '@w:<owner>', the highest mark of an
-- attempt that took, re-entered or reported the write holds, as
-- rwlock_readlock keeps it for read holds (see there); an attempt whose
-- mark is below the owner's mark of either mode ran late, and is refused.
--
-- A first write acquisition with fencing takes a token: the larger of the
-- counter + 1 and the server's clock in microseconds, stored back as the
-- counter, as rlock_acquire takes it, and recorded in the hash's field
-- '@token' for as long as the write hold lasts (rwlock_writeunlock drops
-- it); a repeated first acquisition reports it from there, unless the
-- handle gave the hold up as lost (ARGV[7] "2") and an earlier attempt
-- took it: that hold is adopted with a new token, as in rlock_acquire.
--
-- A free lock is not taken while it is the turn of readers that waited
-- behind the last write hold and have not come yet (and have not
-- lapsed): they go first, as with sync.RWMutex.
--
-- Returns {1, reads, writes, token}, the owner's hold counts and, for a
-- first write acquisition with fencing, its token (0 otherwise; see above
-- for a repeated first acquisition), when it holds
-- the write lock afterwards (its own announcement is then withdrawn);
-- {0, pttl} when another owner holds the lock in either mode, or it is
-- the readers' turn (pttl of whatever holds the caller back, -1 when
-- unknown);
-- {-1, 0} when the caller holds a read lock but not the write lock: an
-- upgrade, which would wait for itself, is refused and nothing changes.
-- A key of another type, or a hash without a mode (another primitive's
-- lock under the same name), raises WRONGTYPE before anything is written.

local lock, writers, timeout, turn, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, lease, expect = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local announce, patience, mark = ARGV[4] == '1', tonumber(ARGV[5]), ARGV[6]
local fencing, anew = ARGV[7] == '1' or ARGV[7] == '2', ARGV[7] == '2'
local rfield, wfield = 'r:' .. owner, 'w:' .. owner
local disowned = ARGV[9] == '0'

local clock = redis.call('time')
local late = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if late > tonumber(ARGV[8]) or tonumber(ARGV[8]) - late > 10000 then
  return redis.error_reply(string.format('LATE %d', late))
end

local mode = redis.call('hget', lock, 'mode')
if not mode and redis.call('exists', lock) == 1 then
  return redis.error_reply('WRONGTYPE the lock hash has no mode: the name is used by another kind of lock')
end

-- now is the server's clock in milliseconds.
local function now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- reading reports whether the owner has a live read hold.
local function reading()
  return redis.call('hexists', lock, rfield) == 1 and redis.call('exists', timeout) == 1
end

-- readersTurn reports whether readers whose turn it is are still to come.
local function readersTurn()
  if redis.call('exists', turn) == 0 then
    return false
  end
  redis.call('zremrangebyscore', turn, '-inf', now())
  return redis.call('exists', turn) == 1
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

local wait = lock
if not mode then
  if not readersTurn() then
    local token = 0
    if fencing then
      token = takeToken()
    end
    redis.call('hset', lock, 'mode', 'write', wfield, 1, '@' .. wfield, mark)
    redis.call('pexpire', lock, lease)
    redis.call('zrem', writers, owner)
    return {1, 0, 1, token}
  end
  wait = turn
elseif mode == 'write' then
  local state = redis.call('hmget', lock, wfield, '@' .. wfield, '@' .. rfield)
  local writes = tonumber(state[1] or 0)
  if writes > 0 then
    if tonumber(mark) < math.max(tonumber(state[2] or 0), tonumber(state[3] or 0)) then
      return {0, redis.call('pttl', lock)} -- a late attempt
    end
    local reads = 0
    if reading() then
      if disowned then
        redis.call('hdel', lock, rfield, '@' .. rfield)
        redis.call('del', timeout)
      else
        reads = tonumber(redis.call('hget', lock, rfield))
      end
    end
    local token = 0
    -- An attempt of a caller that holds no write level, later than the
    -- one the hold records, is no resend: the write hold is one the
    -- handle gave up (lost, or its release failed; a level of unknown
    -- outcome is given back before the handle's next attempt). It
    -- becomes the caller's one level, whatever its count: the caller
    -- will release one, and a level left over would be renewed with
    -- nobody to release it.
    local adopted = expect == 0 and tonumber(mark) > tonumber(state[2] or 0)
    if writes == expect then
      writes = writes + 1
    elseif anew and adopted then
      -- The handle gave this hold up (lost, or its release failed), and
      -- this attempt is a later one than the attempt that took it (a
      -- resend of that attempt names the mark the hold records, and
      -- reports the recorded token below): a new token, so that steps
      -- still under way under the hold given up are refused.
      -- Above the hold's own token too: the counter may have expired
      -- (a hold lives longer than it) and the clock been set back.
      token = takeToken((tonumber(redis.call('hget', lock, '@token')) or 0) + 1)
    elseif fencing and (writes == 1 or expect == 0) then
      token = tonumber(redis.call('hget', lock, '@token')) or takeToken()
    end
    if adopted then
      writes = 1
    end
    redis.call('hset', lock, wfield, writes, '@' .. wfield, mark)
    if redis.call('pttl', lock) < lease then
      redis.call('pexpire', lock, lease)
    end
    if reads > 0 then
      redis.call('pexpire', timeout, lease)
    end
    return {1, reads, writes, token}
  end
elseif not disowned and reading() then
  return {-1, 0}
end

if announce then
  redis.call('zadd', writers, now() + patience, owner)
  if redis.call('pttl', writers) < patience then
    redis.call('pexpire', writers, patience)
  end
end
return {0, redis.call('pttl', wait)}
