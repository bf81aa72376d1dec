-- rwlock_readlock with hash-field expiry (bench only: a variant measured
-- against lua/rwlock_readlock.lua, not used by the library).
--
-- As lua/rwlock_readlock.lua, except that a hold's read lease is the
-- expiry of its own field 'r:<hold id>' in the lock hash (HPEXPIRE,
-- Redis 7.4+ and Valkey 9.0+) instead of a timeout key of its own: a
-- field whose lease ran out is gone, so the field alone says whether the
-- hold reads. KEYS and ARGV as lua/rwlock_readlock.lua without its
-- KEYS[3]:
--
-- KEYS[1]  lock hash; KEYS[2] announced writers; KEYS[3] announced
--          readers; KEYS[4] the readers' turn
-- ARGV[1]  hold id; ARGV[2] lease (ms); ARGV[3] "1": announce when
--          refused; ARGV[4] how long an announcement lasts (ms);
--          ARGV[5] the attempt's deadline (server time, ms)
--
-- Returns as lua/rwlock_readlock.lua.

local lock, writers, readers, turn = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, lease, announce, patience = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local owner, rfield, wfield = string.match(id, '^(.*):'), 'r:' .. id, 'w:' .. id

local deadline, window = tonumber(ARGV[5]), 10000
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if now > deadline or deadline - now > window then
  return redis.error_reply(string.format('LATE %d', now))
end

local state = redis.call('hmget', lock, 'mode', rfield, wfield)
local mode, writes = state[1], tonumber(state[3] or 0)
if not mode and redis.call('exists', lock) == 1 then
  return redis.error_reply('WRONGTYPE the lock hash has no mode: the name is used by another kind of lock')
end

local function later()
  local mine = tonumber(string.sub(id, #owner + 2))
  for _, field in ipairs(redis.call('hkeys', lock)) do
    for _, f in ipairs({field, string.sub(field, 3)}) do
      if string.sub(f, 1, #owner + 1) == owner .. ':' and (tonumber(string.sub(f, #owner + 2)) or 0) > mine then
        return true
      end
    end
  end
  return false
end
local function refuse(key)
  if announce and not later() then
    redis.call('zadd', readers, now + patience, owner)
    if redis.call('pttl', readers) < patience then
      redis.call('pexpire', readers, patience)
    end
  end
  return {0, redis.call('pttl', key)}
end

local reads = 0
if state[2] then
  reads = redis.call('hincrby', lock, rfield, 1)
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

redis.call('hpexpire', lock, lease, 'fields', 1, rfield)
if redis.call('pttl', lock) < lease then
  redis.call('pexpire', lock, lease)
end
return {1, reads, writes}
