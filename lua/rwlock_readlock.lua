-- rwlock_rlock: take a read hold of a read-write lock, or re-enter one.
--
-- KEYS[1]  lock hash: 'mode' = 'read' or 'write'; 'r:<owner>' = read holds
--          and 'w:<owner>' = write holds of each holder
-- KEYS[2]  zset of announced waiting writers: member = owner id, score =
--          when the announcement lapses (server time, milliseconds)
-- KEYS[3]  the caller's read timeout key: its read lease
-- KEYS[4]  zset of announced waiting readers: member = owner id, score =
--          when the announcement lapses (server time, milliseconds)
-- KEYS[5]  zset of the readers whose turn it is: the announced readers
--          that waited behind the last write hold (see
--          rwlock_writeunlock), same members and scores
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds (a re-entry re-arms it)
-- ARGV[3]  the read holds the caller believes it has (0 for none); when the
--          owner already has a different count, this is a retry of an
--          attempt whose reply was lost: the script reports the current
--          state and adds no hold, but re-arms the read lease all the same,
--          since the caller counts the hold's validity from this call. A
--          caller that holds none (0) with a later mark than the read
--          holds record retries nothing: it finds read holds its handle
--          gave up, and takes them on as one level, whatever their count
-- ARGV[4]  the attempt's mark: a decimal integer higher than every
--          earlier mark of the owner
-- ARGV[5]  "1": when refused, announce the caller as a waiting reader, so
--          that the next write release gives it its turn
-- ARGV[6]  how long an announcement lasts, in milliseconds; each attempt
--          renews it, and the waiter's client while it is parked
-- ARGV[7]  the attempt's deadline, server time in milliseconds: a copy
--          that runs after it (sent before a stall, run after it, when
--          its caller has given the attempt up) takes nothing, announces
--          nobody and answers the error 'LATE <server time in ms>' (see
--          internal.RequestWindow); a deadline more than 10s
--          ahead of the server's clock (twice the window: the
--          client's clock is off) is refused the same way, so that a
--          client learns the server's time
-- ARGV[8]  the write holds the caller believes it has (absent: whatever
--          the owner has): "0" when it holds none, and then a write
--          level of the owner's found here is not the caller's but a
--          hold its handle gave up as lost, or whose release failed,
--          still standing in Redis. It is treated as another owner's
--          write hold: the attempt is refused until it lapses. Taking a
--          read level under it would report it to the caller as its own,
--          a write level that no caller unlocks, which the handle's
--          watchdog would renew for as long as the handle lives.
--
-- Next to each count field the hash keeps '@' .. field: the highest mark
-- of an attempt that took, re-entered or reported those holds, so that a
-- release (naming the handle's latest attempt) or a give-back (naming the
-- attempt it undoes) that Redis runs late, after a later attempt, changes nothing
-- (see rwlock_readunlock). Both modes of an owner number their attempts
-- in one sequence, so an attempt whose mark is below either of the
-- owner's marks ran late itself, after a later attempt of either mode:
-- its caller has given up, so it changes nothing and is refused. (A read
-- attempt run after the owner's write attempt would otherwise add a read
-- level nobody holds, which the write unlock turns into a read hold.)
--
-- A new reader (not a re-entry, not the write holder itself) is refused
-- while another owner holds the write lock, and while any writer is
-- announced, so that a stream of readers cannot starve writers; but a
-- reader whose turn it is (KEYS[5]) is let in past the announcements, so
-- that a stream of writers cannot starve readers either. A reader that
-- takes its hold leaves both zsets; the last one to leave the turn ends
-- it (an empty zset is no key), and new writers may take the lock again.
--
-- Returns {1, reads, writes}, the owner's hold counts, when it holds a
-- read lock afterwards; {0, wait} when refused, wait being the remaining
-- lease of the write holder or of the writers' announcements in
-- milliseconds (-1 when unknown).
-- A key of another type, or a hash without a mode (another primitive's
-- lock under the same name), raises WRONGTYPE before anything is written.

local lock, writers, timeout, readers, turn = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local owner, lease, expect, mark = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local announce, patience = ARGV[5] == '1', tonumber(ARGV[6])
local rfield, wfield = 'r:' .. owner, 'w:' .. owner

local clock = redis.call('time')
local late = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if late > tonumber(ARGV[7]) or tonumber(ARGV[7]) - late > 10000 then
  return redis.error_reply(string.format('LATE %d', late))
end

local state = redis.call('hmget', lock, 'mode', rfield, wfield, '@' .. rfield, '@' .. wfield)
local mode, reads, writes = state[1], tonumber(state[2] or 0), tonumber(state[3] or 0)
if not mode and redis.call('exists', lock) == 1 then
  return redis.error_reply('WRONGTYPE the lock hash has no mode: the name is used by another kind of lock')
end
if reads > 0 and redis.call('exists', timeout) == 0 then
  reads = 0 -- the field outlived its lease: a stale hold, replaced below
end
if tonumber(mark) < math.max(tonumber(state[4] or 0), tonumber(state[5] or 0)) then
  return {0, redis.call('pttl', lock)} -- a late attempt
end
local disowned = writes > 0 and ARGV[8] == '0'

-- arm re-arms the owner's read lease and keeps the hash alive at least as
-- long as it.
local function arm()
  redis.call('set', timeout, '1', 'px', lease)
  if redis.call('pttl', lock) < lease then
    redis.call('pexpire', lock, lease)
  end
end

if reads > 0 and not disowned then
  if reads == expect then
    reads = reads + 1
  elseif expect == 0 and tonumber(mark) > tonumber(state[4] or 0) then
    -- No resend (it would name the mark recorded): read levels of a
    -- hold the handle gave up, which become the caller's one level, as
    -- rwlock_writelock adopts a write hold given up.
    reads = 1
  end
  redis.call('hset', lock, rfield, reads, '@' .. rfield, mark)
  arm()
  return {1, reads, writes}
end

-- now is the server's clock in milliseconds.
local function now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- refuse announces a blocking reader, so that the write release it waits
-- for gives it its turn, and reports how long the lease of key, whatever
-- holds the reader back, runs.
local function refuse(key)
  if announce then
    redis.call('zadd', readers, now() + patience, owner)
    if redis.call('pttl', readers) < patience then
      redis.call('pexpire', readers, patience)
    end
  end
  return {0, redis.call('pttl', key)}
end

if disowned then
  return refuse(lock)
end
if writes == 0 then
  if mode == 'write' then
    return refuse(lock)
  end
  if redis.call('zcard', writers) > 0 and not redis.call('zscore', turn, owner) then
    redis.call('zremrangebyscore', writers, '-inf', now())
    if redis.call('zcard', writers) > 0 then
      return refuse(writers)
    end
  end
end

redis.call('hset', lock, 'mode', mode or 'read', rfield, 1, '@' .. rfield, mark)
redis.call('zrem', readers, owner)
redis.call('zrem', turn, owner)
arm()
return {1, 1, writes}
