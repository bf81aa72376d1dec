-- rwlock_renew: extend the leases of an owner's holds of a read-write lock.
--
-- KEYS[1]  lock hash: 'r:<owner>' = read holds, 'w:<owner>' = write holds
-- KEYS[2]  the owner's read timeout key: its read lease
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds
--
-- Renews the owner's read lease if it holds a read lock, and keeps the
-- hash alive at least as long as the lease. The hash never expires before
-- its longest lease: every lease set on a hold also pushes the hash's expiry
-- out to at least its end, and it is recomputed whenever a reader leaves.
--
-- Returns 1 when the owner holds the lock in some mode (its leases were
-- extended). When it holds nothing (nothing changed): the field of another
-- holder, 'w:<owner id>' for the writer (first) or 'r:<owner id>' for a
-- reader, or 0 when nobody else holds it.

local lock, timeout = KEYS[1], KEYS[2]
local owner, lease = ARGV[1], tonumber(ARGV[2])

local held = redis.call('hexists', lock, 'w:' .. owner) == 1
if redis.call('hexists', lock, 'r:' .. owner) == 1 and redis.call('pexpire', timeout, lease) == 1 then
  held = true
end
if not held then
  local reader = 0
  for _, field in ipairs(redis.call('hkeys', lock)) do
    local mode = string.sub(field, 1, 2)
    if mode == 'w:' and field ~= 'w:' .. owner then
      return field
    elseif mode == 'r:' and field ~= 'r:' .. owner and reader == 0 then
      reader = field
    end
  end
  return reader
end
if redis.call('pttl', lock) < lease then
  redis.call('pexpire', lock, lease)
end
return 1
