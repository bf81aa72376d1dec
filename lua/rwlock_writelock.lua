-- rwlock_writelock: take the write lock of a read-write lock, or wait.
--
-- KEYS[1]  lock hash: 'mode' = 'read' or 'write'; 'w:<hold id>' = 1 for
--          the write holder, 'r:<hold id>' = the tag of each reading
--          hold's one read level (see rwlock_readlock); '@token' the
--          write hold's fencing token
-- KEYS[2]  zset of announced waiting writers: member = owner id (the
--          handle part of a hold id), score = when the announcement
--          lapses (server time, milliseconds)
-- KEYS[3]  the hold's read timeout key: its read lease (a downgrade's)
-- KEYS[4]  zset of the readers whose turn it is (see rwlock_writeunlock):
--          member = owner id, score = when its announcement lapses
-- KEYS[5]  fencing counter: the last token of the name, which expires a
--          lease (ARGV[2]) after it was taken; touched when ARGV[5] is "1"
-- KEYS[6..] the keys other kinds of primitive keep under the name (see
--          part kind): nothing is written while the lock hash is absent
--          and one exists
-- ARGV[1]  hold id: "<owner id>:<n>", never reused; a handle's hold spans
--          both modes, from its first level to the last
-- ARGV[2]  lease in milliseconds
-- ARGV[3]  "1": when refused, announce the owner as a waiting writer, so
--          that new readers wait behind it
-- ARGV[4]  how long an announcement lasts, in milliseconds; each attempt
--          renews it, and the waiter's client while it is parked
-- ARGV[5]  "1": take a fencing token when the write lock is taken
-- ARGV[6]  the attempt's deadline, server time in ms (see part late)
--
-- A hold takes the write level once at most: re-entry is counted in the
-- process, and a write attempt under the hold's own read levels is an
-- upgrade, refused. So a write level of ARGV[1] found here was taken by
-- this very attempt (a resend whose first reply was lost): it is
-- reported with its token, and its leases re-armed, since the caller
-- counts the hold's validity from this call. A hold the handle gave up
-- has another id and is another holder to this attempt: it is waited for.
--
-- A fencing token follows rlock_acquire's rule; '@token' keeps it while
-- the write level lasts.
--
-- A free lock is not taken while it is the turn of readers that waited
-- behind the last write hold and have not come yet (nor lapsed): they go
-- first, as with sync.RWMutex.
--
-- Returns {1, reads, 1, token} when the hold has the write lock (reads:
-- its read levels; token 0 without fencing), and withdraws the owner's
-- announcement; {0, pttl} when another hold has the lock in either mode,
-- or it is the readers' turn (pttl of whatever holds the caller back, -1
-- when unknown); {-1, 0} when the hold has read levels: an upgrade, which
-- would wait for itself, is refused and nothing changes.
-- A key of another type, or a hash without a mode (another primitive's
-- lock under the same name), raises WRONGTYPE before anything is written.

local lock, writers, timeout, turn, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, lease, announce, patience = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local owner, rfield, wfield = string.match(id, '^(.*):'), 'r:' .. id, 'w:' .. id

local deadline, window = tonumber(ARGV[6]), 10000
-- part: late
-- part: token

local state = redis.call('hmget', lock, 'mode', wfield, rfield, '@token')
local mode = state[1]
if not mode and redis.call('exists', lock) == 1 then
  return redis.error_reply('WRONGTYPE the lock hash has no mode: the name is used by another kind of lock')
end
-- A read level counts while its lease runs: a field that outlived it is
-- a lost hold's, which the next read release drops.
local reads = 0
if state[3] and redis.call('exists', timeout) == 1 then
  reads = 1
end

if state[2] then
  if redis.call('pttl', lock) < lease then
    redis.call('pexpire', lock, lease)
  end
  if reads > 0 then
    redis.call('pexpire', timeout, lease)
  end
  return {1, reads, 1, tonumber(state[4]) or 0}
end
if reads > 0 then
  return {-1, 0}
end

local wait = lock
if not mode then
  local others, kinds = 6, #KEYS - 5
-- part: kind
  wait = turn
  if redis.call('exists', turn) == 1 then
    redis.call('zremrangebyscore', turn, '-inf', now)
  end
  if redis.call('exists', turn) == 0 then
    local token = 0
    if ARGV[5] == '1' then
      token = takeToken(clock, lock, fence, lease, 'mode', 'write', wfield, 1)
    else
      redis.call('hset', lock, 'mode', 'write', wfield, 1)
    end
    redis.call('pexpire', lock, lease)
    redis.call('zrem', writers, owner)
    return {1, 0, 1, token}
  end
end

-- part: later
if announce and not later() then
  redis.call('zadd', writers, now + patience, owner)
  if redis.call('pttl', writers) < patience then
    redis.call('pexpire', writers, patience)
  end
end
return {0, redis.call('pttl', wait)}
