-- rlock_renew: extend the lease of a reentrant lock if the hold stands.
--
-- KEYS[1]  lock hash: field = hold id (see rlock_acquire)
-- ARGV[1]  hold id
-- ARGV[2]  lease in milliseconds
--
-- Returns 1 when the lease was extended. When the hold is gone (nothing
-- changed): the hold id of whoever holds the lock now, or 0 when nobody
-- does. The hash's other fields start with '@'; a hold id never does.

if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    if string.sub(field, 1, 1) ~= '@' then
      return field
    end
  end
  return 0
end
redis.call('pexpire', KEYS[1], tonumber(ARGV[2]))
return 1
