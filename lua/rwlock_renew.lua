-- rwlock_renew: extend the leases of a read-write lock's hold.
--
-- KEYS[1]  lock hash (see rwlock_writelock)
-- KEYS[2]  the hold's read timeout key: its read lease
-- ARGV[1]  hold id
-- ARGV[2]  lease in milliseconds
--
-- Renews the hold's read lease if it has read levels, and keeps the hash
-- alive at least as long as the lease. The hash never expires before its
-- longest lease: every lease set on a hold also pushes the hash's expiry
-- out to at least its end, and it is recomputed whenever a reader leaves.
-- A read field whose lease ran out is not renewed: that hold's reads are
-- lost, and a renewal must not bring them back.
--
-- Returns 1 when the hold has the lock in some mode (its leases were
-- extended). When it has nothing (nothing changed): the field of another
-- holder, 'w:<hold id>' for the writer (first) or 'r:<hold id>' for a
-- reader, or 0 when nobody else holds it.

local lock, timeout = KEYS[1], KEYS[2]
local id, lease = ARGV[1], tonumber(ARGV[2])

local held = redis.call('hexists', lock, 'w:' .. id) == 1
if redis.call('hexists', lock, 'r:' .. id) == 1 and redis.call('pexpire', timeout, lease) == 1 then
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
