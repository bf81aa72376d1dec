-- rwlock_readlock: take a read level of a read-write lock, or wait.
--
-- KEYS[1]  lock hash: 'mode' = 'read' or 'write'; 'w:<hold id>' = 1 for
--          the write holder, 'r:<hold id>' = 1 for each reading hold (see
--          rwlock_writelock)
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
--
-- Goroutines of one handle that read together share its hold and its one
-- read level: the handle counts its readers in the process, and attempts
-- only for a hold without a read level. A read level of ARGV[1] found
-- here is the hold's (a copy of this attempt that Redis runs late, or
-- an attempt racing a release of the hold's readers): it stays one level,
-- so a copy run late changes nothing. A level taken under the hold's own
-- write level is a downgrade: let in at once, it outlives the write
-- level. A hold the handle gave up has another id: it is another reader,
-- or a writer to wait for.
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
-- when unknown).
-- A key of another type, or a hash without a mode (another primitive's
-- lock under the same name), raises WRONGTYPE before anything is written.

local lock, writers, timeout, readers, turn = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, lease, announce, patience = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local owner, rfield, wfield = string.match(id, '^(.*):'), 'r:' .. id, 'w:' .. id

local deadline, window = tonumber(ARGV[5]), 10000
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
  reads = 1
  redis.call('hset', lock, 'mode', mode or 'read', rfield, 1)
  redis.call('zrem', readers, owner)
  redis.call('zrem', turn, owner)
end

redis.call('set', timeout, '1', 'px', lease)
if redis.call('pttl', lock) < lease then
  redis.call('pexpire', lock, lease)
end
return {1, reads, writes}
