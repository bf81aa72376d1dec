-- rlock_renew: extend the lease of a reentrant lock if the owner holds it.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds
--
-- Returns 1 when the lease was extended, 0 when the owner no longer holds
-- the lock (nothing changed).

if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('pexpire', KEYS[1], tonumber(ARGV[2]))
return 1
