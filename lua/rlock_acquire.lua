-- rlock_acquire: take a reentrant lock, re-enter it, or wait in line.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  waiter deadlines: zset, member = owner id, score = the server
--          time in milliseconds after which the waiter counts as dead
-- KEYS[4]  fencing counter (never expires; touched when ARGV[3] == "1")
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds (re-armed on re-entry)
-- ARGV[3]  "1": take the next fencing token on a first acquisition, and
--          make sure the counter exists when joining the line, so that a
--          grant to this waiter takes one
-- ARGV[4]  the hold count the caller believes it has (0 for none); when the
--          owner already holds a different count, this is a retry of an
--          attempt whose reply was lost, or a grant (see rlock_unlock) the
--          caller has not completed: the script reports the current state
--          and adds no hold, so a retried acquire never adds one; it
--          re-arms the lease all the same, since the caller counts the
--          hold's validity from this call
-- ARGV[5]  waiter timeout in milliseconds: when the lock is held by
--          another owner, the owner joins the end of the line (or keeps
--          its place) with the deadline now + ARGV[5]; "0" never joins
--          (TryLock). Every rlock waiter has the same timeout, so the line
--          keys live as long as the newest deadline.
-- ARGV[6]  the attempt's sequence number among the owner's, below 4096:
--          the waiter's score in line is its deadline plus ARGV[6]/4096,
--          so that two attempts in one millisecond have different marks
--
-- A free lock goes to the caller, whoever waits: a newcomer may take a
-- lock it finds free (a release never leaves it free while a live waiter
-- is in line: it grants it to the first). The caller's own place in line,
-- if any, is then given up.
--
-- Returns {1, holds, token} when the owner holds the lock afterwards (token
-- is 0 on re-entry or without fencing; on a repeated first acquisition or a
-- grant it is the counter's current value, which is this hold's token
-- because nobody else can have acquired since), or {0, pttl} when another
-- owner holds it (pttl is -1 when the key has no expiry); a blocking
-- attempt's refusal is {0, pttl, mark}: the waiter's new score in line,
-- formatted to read back exactly, which a grant to it names (see
-- rlock_unlock).
-- A key of another type, or a read-write lock's hash (it has a 'mode'
-- field) under the same name, raises WRONGTYPE before anything is written.

local lock, queue, timeouts, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease, fencing, expect = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local patience, seq = tonumber(ARGV[5]), tonumber(ARGV[6])

-- PTTL first: it tells a free lock (-2) from a held one and is the reply
-- to a waiter.
local ttl = redis.call('pttl', lock)
if ttl == -2 then
  local token = 0
  if fencing then
    token = redis.call('incr', fence)
  end
  redis.call('hset', lock, owner, 1)
  redis.call('pexpire', lock, lease)
  if patience > 0 and redis.call('zrem', timeouts, owner) == 1 then
    redis.call('lrem', queue, 1, owner)
  end
  return {1, 1, token}
end

-- One HMGET reads the owner's count and tells a read-write lock (a hash
-- with a mode field) from this kind.
local state = redis.call('hmget', lock, owner, 'mode')
if state[2] then
  return redis.error_reply('WRONGTYPE the lock hash has a mode: the name is used by a read-write lock')
end
local held = state[1]
if held then
  held = tonumber(held)
  if held ~= expect then
    local token = 0
    if fencing and held == 1 then
      token = tonumber(redis.call('get', fence) or 0)
    end
    redis.call('pexpire', lock, lease)
    return {1, held, token}
  end
  local holds = redis.call('hincrby', lock, owner, 1)
  redis.call('pexpire', lock, lease)
  return {1, holds, 0}
end

if patience > 0 then
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local mark = now + patience + seq / 4096
  -- ZADD counts a waiter new to the line: only then does it join the end.
  if redis.call('zadd', timeouts, mark, owner) == 1 then
    redis.call('rpush', queue, owner)
    if fencing then
      redis.call('incrby', fence, 0)
    end
  end
  redis.call('pexpire', queue, patience)
  redis.call('pexpire', timeouts, patience)
  return {0, ttl, string.format('%.17g', mark)}
end
return {0, ttl}
