-- rwlock_readlock: take a read level of a read-write lock, or wait.
--
-- KEYS[1]  lock hash (see rwlock_writelock)
-- KEYS[2]  zset of announced waiting writers: member = owner id, score =
--          when the announcement lapses (server time, milliseconds)
-- KEYS[3]  the hold's read timeout key: its read lease. It is the hold's,
--          not the handle's, so that read levels of a hold the handle
--          gave up lapse with their own lease, whatever the handle's
--          next hold renews
-- KEYS[4]  zset of announced waiting readers: member = owner id, score =
--          when the announcement lapses (server time, milliseconds)
-- KEYS[5]  zset of the readers whose turn it is: the announced readers
--          that waited behind the last write hold (see
--          rwlock_writeunlock), same members and scores
-- KEYS[6..] the keys other kinds of primitive keep under the name (see
--          part kind): nothing is written while the lock hash is absent
--          and one exists
-- ARGV[1]  hold id (see rwlock_writelock)
-- ARGV[2]  lease in milliseconds: the read lease, which every level re-arms
-- ARGV[3]  "1": when refused, announce the owner as a waiting reader, so
--          that the next write release gives it its turn
-- ARGV[4]  how long an announcement lasts, in milliseconds; each attempt
--          renews it, and the waiter's client while it is parked
-- ARGV[5]  the attempt's deadline, server time in ms (see part late)
-- ARGV[6]  the attempt's tag: its number, higher than any earlier attempt
--          of the handle's, which 'r:<hold id>' keeps for the read level
--
-- Goroutines of one handle that read together share its hold and its one
-- read level: the handle counts its readers in the process, and attempts
-- only for a hold without a read level. The level's tag names it to its
-- release: a hold may take a read level again (a downgrade, released,
-- then taken again), and a late copy of the first release must not
-- remove the second. A live level of ARGV[1] found here with a lower tag
-- (an earlier attempt's copy run late) becomes this attempt's; with a
-- higher one, this is a copy run late: it changes nothing. A level taken
-- under the hold's own write level is a downgrade: let in at once, it
-- outlives the write level. A hold the handle gave up has another id: it
-- is another reader, or a writer to wait for.
--
-- A new read hold is refused while another hold has the write lock, and
-- while any writer is announced, so that a stream of readers cannot
-- starve writers; but a reader whose turn it is (KEYS[5]) is let in past
-- the announcements, so that a stream of writers cannot starve readers
-- either. A reader that takes its hold leaves both zsets; the last one to
-- leave the turn ends it (an empty zset is no key), and new writers may
-- take the lock again.
--
-- Returns {1, 1, writes}, the hold's levels, when it has a read level
-- afterwards; {0, wait} when refused, wait being the remaining lease of
-- the write holder or of the writers' announcements in milliseconds (-1
-- when unknown, or a later attempt has the level).
-- A key of another type, or a hash without a mode (another primitive's
-- lock under the same name), raises WRONGTYPE before anything is written.

local lock, writers, timeout, readers, turn = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, lease, announce, patience = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local owner, rfield, wfield = string.match(id, '^(.*):'), 'r:' .. id, 'w:' .. id

local deadline, window, tag = tonumber(ARGV[5]), 10000, tonumber(ARGV[6])
-- part: late

local state = redis.call('hmget', lock, 'mode', rfield, wfield)
local mode, writes = state[1], tonumber(state[3] or 0)
if not mode and redis.call('exists', lock) == 1 then
  return redis.error_reply('WRONGTYPE the lock hash has no mode: the name is used by another kind of lock')
end
if not mode then
  local others, kinds = 6, #KEYS - 5
-- part: kind
end

-- refuse announces a blocking reader, so that the write release it waits
-- for gives it its turn, and reports how long the lease of key, whatever
-- holds the reader back, runs.
-- part: later
local function refuse(key)
  if announce and not later() then
    redis.call('zadd', readers, now + patience, owner)
    if redis.call('pttl', readers) < patience then
      redis.call('pexpire', readers, patience)
    end
  end
  return {0, redis.call('pttl', key)}
end

-- A read field whose lease ran out is a lost hold's (the handle finds it
-- lost at its next renewal): it counts for nothing, and is taken afresh.
local reads = 0
if state[2] and redis.call('exists', timeout) == 1 then
  if tonumber(state[2]) > tag then
    return {0, -1}
  end
  reads = 1
elseif writes == 0 then
  if mode == 'write' then
    return refuse(lock)
  end
  if redis.call('exists', writers) == 1 and not redis.call('zscore', turn, owner) then
    redis.call('zremrangebyscore', writers, '-inf', now)
    if redis.call('exists', writers) == 1 then
      return refuse(writers)
    end
  end
end
if reads == 0 then
  redis.call('zrem', readers, owner)
  redis.call('zrem', turn, owner)
end
redis.call('hset', lock, 'mode', mode or 'read', rfield, ARGV[6])

redis.call('set', timeout, '1', 'px', lease)
if redis.call('pttl', lock) < lease then
  redis.call('pexpire', lock, lease)
end
return {1, 1, writes}
