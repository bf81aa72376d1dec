-- rwlock_readunlock with hash-field expiry (bench only: a variant measured
-- against lua/rwlock_readunlock.lua, not used by the library).
--
-- As lua/rwlock_readunlock.lua, except that a hold's read lease is the
-- expiry of its field (see hfe/rwlock_readlock.lua): no timeout key to
-- check or delete, and the other readers' leases come from one HPTTL of
-- their fields instead of a PTTL of each one's timeout key. An expired
-- field is gone already, so nothing is left to drop.
--
-- KEYS[1]  lock hash; KEYS[2] the writers' wake-up channel
-- ARGV[1]  hold id; ARGV[2] lease (ms); ARGV[3] "1": SPUBLISH;
--          ARGV[4] the read levels expected, or 0 for any
--
-- Returns as lua/rwlock_readunlock.lua.

local lock, channel = KEYS[1], KEYS[2]
local id, lease, expect = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[4])
local rfield = 'r:' .. id

local state = redis.call('hmget', lock, rfield, 'w:' .. id)
if not state[1] then
  return {-1}
end
local reads, writes = tonumber(state[1]), tonumber(state[2] or 0)
if expect > 0 and reads ~= expect then
  return {-2}
end

if reads > 1 then
  redis.call('hincrby', lock, rfield, -1)
  redis.call('hpexpire', lock, lease, 'fields', 1, rfield)
  if redis.call('pttl', lock) < lease then
    redis.call('pexpire', lock, lease)
  end
  return {1, reads - 1, writes}
end

redis.call('hdel', lock, rfield)
if writes > 0 then
  return {1, 0, writes}
end

local others = {}
for _, field in ipairs(redis.call('hkeys', lock)) do
  if string.sub(field, 1, 2) == 'r:' then
    others[#others + 1] = field
  end
end
local longest = 0
if #others > 0 then
  for _, ttl in ipairs(redis.call('hpttl', lock, 'fields', #others, unpack(others))) do
    longest = math.max(longest, ttl)
  end
end
if longest > 0 then
  redis.call('pexpire', lock, longest)
  return {1, 0, 0}
end

redis.call('del', lock)
redis.call(ARGV[3] == '1' and 'spublish' or 'publish', channel, '1')
return {1, 0, 0}
