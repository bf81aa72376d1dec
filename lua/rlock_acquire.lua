-- rlock_acquire: take a reentrant lock, or re-enter it.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  fencing counter (touched only when ARGV[3] == "1"; never expires)
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds (re-armed on re-entry)
-- ARGV[3]  "1": take the next fencing token on a first acquisition
-- ARGV[4]  the hold count the caller believes it has (0 for none); when the
--          owner already holds a different count, this is a retry of an
--          attempt whose reply was lost: the script reports the current
--          state and adds no hold, so a retried acquire never adds one; it
--          re-arms the lease all the same, since the caller counts the
--          hold's validity from this call, not from the lost one
-- ARGV[5]  "1": the caller holds nothing and its previous attempt, in the
--          same wait, was refused without error: a held lock is then
--          refused after PTTL alone, skipping the owner and type check
--          that attempt already made, so a waiter's retry costs one
--          command instead of two (a key without expiry still gets the
--          full check)
--
-- Returns {1, holds, token} when the owner holds the lock afterwards (token
-- is 0 on re-entry or without fencing; on a repeated first acquisition it is
-- the counter's current value, which is this hold's token because nobody
-- else can have acquired since), or {0, pttl} when another owner holds it
-- (pttl is -1 when the key has no expiry).
-- A key of another type, or a read-write lock's hash (it has a 'mode'
-- field) under the same name, raises WRONGTYPE before anything is written.

local lock, fence = KEYS[1], KEYS[2]
local owner, lease, fencing, expect = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local again = ARGV[5] == '1'

-- PTTL first: it tells a free lock (-2) from a held one and is the reply
-- to a waiter, so a failed attempt costs two commands, not three.
local ttl = redis.call('pttl', lock)
if ttl == -2 then
  local token = 0
  if fencing then
    token = redis.call('incr', fence)
  end
  redis.call('hset', lock, owner, 1)
  redis.call('pexpire', lock, lease)
  return {1, 1, token}
end
-- A lock hash always has a lease: a key without one (PTTL -1) is not a
-- lock, so it gets the full check and its WRONGTYPE.
if again and ttl ~= -1 then
  return {0, ttl}
end

-- One HMGET reads the owner's count and tells a read-write lock (a hash
-- with a mode field) from this kind, so a refused attempt still costs two.
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

return {0, ttl}
