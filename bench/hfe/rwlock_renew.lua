-- rwlock_renew with hash-field expiry (bench only: a variant measured
-- against lua/rwlock_renew.lua, not used by the library).
--
-- As lua/rwlock_renew.lua, except that the read lease is the expiry of
-- the hold's field (see hfe/rwlock_readlock.lua): HPEXPIRE answers -2
-- for a field that is gone, its lease run out, so a lost read hold is
-- not brought back.
--
-- KEYS[1]  lock hash
-- ARGV[1]  hold id; ARGV[2] lease (ms)
--
-- Returns as lua/rwlock_renew.lua.

local lock = KEYS[1]
local id, lease = ARGV[1], tonumber(ARGV[2])

local held = redis.call('hexists', lock, 'w:' .. id) == 1
if redis.call('hpexpire', lock, lease, 'fields', 1, 'r:' .. id)[1] == 1 then
  held = true
end
if not held then
  local reader = 0
  for _, field in ipairs(redis.call('hkeys', lock)) do
    local mode = string.sub(field, 1, 2)
    if mode == 'w:' then
      return field
    elseif mode == 'r:' and field ~= 'r:' .. id and reader == 0 then
      reader = field
    end
  end
  return reader
end
if redis.call('pttl', lock) < lease then
  redis.call('pexpire', lock, lease)
end
return 1
