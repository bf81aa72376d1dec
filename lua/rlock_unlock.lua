-- rlock_unlock: release a reentrant lock's hold and grant the lock to the
-- first live waiter in line.
--
-- KEYS[1]  lock hash (see rlock_acquire)
-- KEYS[2]  waiter list: owner ids, oldest first
-- KEYS[3]  fencing counter: a grant to a waiter that asked for fencing
--          takes the next token, and the counter then lives ARGV[2]
-- KEYS[4]  the lock's release channel, for those who watch the lock
--          without standing in line (a group of locks): a release that
--          leaves the lock free publishes "1" on it when the hold is
--          marked '@watched', and a grant carries the mark over
-- ARGV[1]  hold id
-- ARGV[2]  lease in milliseconds: the fencing counter's lifetime
-- ARGV[3]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[4]  wake-up channel prefix: a waiter's channel is ARGV[4] .. owner
--          id (keyspace.Names.WaiterChannel)
-- ARGV[5]  grant lease in milliseconds
-- ARGV[6]  place prefix: a waiter's place in line is the key ARGV[6] ..
--          owner id (see rlock_acquire)
-- ARGV[7]  waiter timeout in milliseconds: the longest a place lives
--
-- A hold id is never reused, so a release is idempotent however late it
-- runs: a copy that finds its id gone (released, granted on, expired)
-- changes nothing, and never touches a later hold of the same handle.
--
-- The grantee's channel and place are built here (the grantee is known
-- only here) and carry the lock's hash tag. Should a migrating slot refuse
-- GETDEL (called with pcall before anything of the lock changes), the
-- waiter goes back to the head and the script fails with TRYAGAIN.
--
-- A grant pops owners off the line until one whose place still exists and
-- takes the place (GETDEL: a place that expired is a dead waiter, dropped,
-- as is the releasing owner's own place, left by a Lock whose leave
-- failed). It makes the hold id the place names the holder with the grant
-- lease, takes the next fencing token when the place asks for one (its
-- value starts with "f"), and publishes "h" .. token .. ":" .. id .. "#"
-- .. attempt on the owner's channel, naming the hold id and the waiter's
-- last refused attempt: a message read late names an attempt that is not
-- the waiter's last (a later one was refused since, after the grant
-- lapsed), and is never taken for a grant to it.
--
-- Returns 0 when the lock was released and nobody was in line (the common
-- case: an integer costs Redis less than a table), {0} when nobody live
-- was, {0, grantee id, token, attempt} when it was granted (a grantee of
-- the releasing process completes its hold without waiting for the
-- message), {-1} when the id holds nothing (nothing changed).

local lock, queue, fence, channel, id = KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1]
local sharded = ARGV[3] == '1'
local publish = sharded and 'spublish' or 'publish'

local state = redis.call('hmget', lock, id, '@watched')
local watched = state[2]
if not state[1] then
  return {-1}
end

-- grant pops owners off the line, from head, until one takes the lock
-- (see above), and returns that grant's reply, or nil when nobody live
-- was in line. Only a grant reads its arguments (a release with nobody
-- in line costs Redis about 0.6µs less).
local function grant(head)
  local lease, grantLease = tonumber(ARGV[2]), tonumber(ARGV[5])
  local prefix, places, patience = ARGV[4], ARGV[6], tonumber(ARGV[7])
  local owner = string.match(id, '^(.*):')
-- part: token
  while head do
    local entry = redis.pcall('getdel', places .. head)
    if type(entry) == 'table' and entry.err then
      redis.call('lpush', queue, head)
      redis.call('pexpire', queue, patience)
      return redis.error_reply('TRYAGAIN the place of the waiter at the head of the line is not on this node yet: ' .. entry.err)
    end
    -- A place holds a hold id of head's, which starts with head and ':',
    -- "f" first when a grant to it takes a token (a host name may start
    -- with "f" itself), and '#' and an attempt last. A place of a version
    -- before hold ids (a mark) is passed over like a dead waiter's: that
    -- waiter's next attempt joins the line again.
    local fenced = entry and string.sub(entry, 1, #head + 2) == 'f' .. head .. ':'
    local named = entry and (fenced and string.sub(entry, 2) or entry)
    local grantee, attempt = string.match(named or '', '^(.*)#(%d+)$')
    if grantee and head ~= owner and string.sub(grantee, 1, #head + 1) == head .. ':' then
      local token = 0
      redis.call('del', lock)
      if fenced then
        token = takeToken(nil, lock, fence, lease, grantee, 1)
      else
        redis.call('hset', lock, grantee, 1)
      end
      if watched then
        redis.call('hset', lock, '@watched', watched)
      end
      redis.call('pexpire', lock, grantLease)
      redis.pcall(publish, prefix .. head, string.format('h%.0f:%s', token, named))
      return {0, grantee, token, attempt}
    end
    head = redis.call('lpop', queue)
  end
  return nil
end

local granted = grant(redis.call('lpop', queue))
if granted then
  return granted
end

redis.call('del', lock)
if watched then
  redis.pcall(publish, channel, '1')
end
return 0
