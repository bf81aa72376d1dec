-- fairlock_unlock: release a fair lock's hold (one level in Redis:
-- re-entry is counted in the process) and grant the lock to the first
-- live waiter in line.
--
-- KEYS[1]  lock hash: field = owner id, value = hold count
-- KEYS[2]  waiter list, oldest first
-- KEYS[3]  waiter deadlines (zset, server time in milliseconds)
-- KEYS[4]  fencing counter: a grant to a waiter that asked for fencing
--          takes the next token (see fairlock_acquire), and the counter
--          then lives ARGV[2] from now
-- ARGV[1]  owner id
-- ARGV[2]  lease in milliseconds: the fencing counter's lifetime
-- ARGV[3]  the hold count the caller expects before this unlock, or 0 for
--          any; a mismatch changes nothing (a retried unlock whose first
--          reply was lost must not release a second level)
-- ARGV[4]  wake-up channel prefix: a waiter's channel is ARGV[4] .. owner id
-- ARGV[5]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[6]  grant lease in milliseconds: the longest a grant lasts
-- ARGV[7]  place prefix: a waiter's place is the key ARGV[7] .. owner id
--          (see fairlock_acquire), in the slot of the declared keys
-- ARGV[8]  the mark this copy names: for a release, the owner's latest
--          attempt's when it was sent; for a give-back, the attempt it
--          undoes ("0" names none). It changes nothing (-2)
--          when the hold records a later attempt's mark (see
--          fairlock_acquire): a copy run late never releases the owner's
--          next hold (or leadership), nor a level taken since
-- ARGV[9]  "" for a fair lock; for an election's leadership, the channel
--          on which every change of leader is published (see
--          fairlock_acquire's ARGV[12]): a release that frees the lock or
--          grants it publishes "-1" there, and a grant moves the grantee's
--          value from its value key to the hash's '@value'
-- ARGV[10] with ARGV[9]: value key prefix: a candidate's value key is
--          ARGV[10] .. owner id (read with pcall before the head's place,
--          in the slot of the declared keys, as the place is)
--
-- First every waiter whose deadline has passed (server clock, TIME) leaves
-- the line, when anyone is in it (the uncontended release, with the line
-- empty, reads neither the clock nor the deadlines). A grant pops waiters until one whose place still exists (a
-- waiter silent for longer than a grant lease is taken for dead and
-- dropped, so that dead waiters never hold the lock one grant lease after
-- another), takes its place (GETDEL), makes it the holder with one level
-- and the waiter's own grant lease (its place says it: the shorter of
-- ARGV[6] and its waiter timeout, see fairlock_acquire; ARGV[6] for a
-- place that does not), takes the next fencing token when its place asks
-- for one (0 otherwise; the larger of the counter + 1 and the server's
-- clock in microseconds, recorded in the hash's field '@token' as
-- fairlock_acquire records it) and publishes "g" .. token .. ":" .. mark
-- on the waiter's channel (ARGV[4] .. head, built here because the head
-- is only known inside the script): the mark its last refused attempt
-- stored in its place names the attempt the grant answers. A lock found
-- free with waiters in line (its holder's lease ran out) is granted the
-- same way, whoever calls.
--
-- The place is a key the script does not declare (the head is only known
-- here): Redis Cluster allows it, in the slot of the declared keys, except
-- while that slot migrates and the place is not on this node (moved ahead
-- of the lock, or lapsed: Redis redirects a key it does not have in a
-- migrating slot). While the fencing counter is absent (no fencing, or it
-- expired) the whole script is refused before it runs (it is a declared
-- key); otherwise GETDEL is called with pcall before the lock changes: on
-- such an error the waiter goes back to the head, and the script fails
-- with TRYAGAIN having changed nothing but the removal of dead waiters;
-- the caller resends it.
--
-- Returns {holds}: the owner's remaining holds (0: the lock was released
-- and nobody waited; a bare 0 when the line was empty, the common case,
-- since an integer costs Redis less than a table), -1 when the owner does
-- not hold the lock, -2 when the hold count differs from ARGV[3] or the
-- copy comes too late (ARGV[8]; nothing changed); or {0, grantee, token,
-- mark} when this
-- release granted the lock, so that a grantee in the releasing process
-- can complete its hold without waiting for the message. A resent unlock
-- whose first run went through finds the owner's field gone ({-1}): it
-- never releases the grantee's hold nor grants again.
-- A key of another type raises WRONGTYPE before anything is written.
local lock, queue, timeouts, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local owner, lease, expect = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local prefix, sharded, grantLease, places = ARGV[4], ARGV[5] == '1', tonumber(ARGV[6]), ARGV[7]
local named = tonumber(ARGV[8])
local office, values = ARGV[9] or '', ARGV[10]

local state = redis.call('hmget', lock, owner, '@' .. owner)
local holds = state[1]

-- Drops the waiters whose deadline has passed from the line.
local function prune()
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local dead = redis.call('zrangebyscore', timeouts, '-inf', now)
  for _, w in ipairs(dead) do
    redis.call('lrem', queue, 1, w)
  end
  if #dead > 0 then
    redis.call('zremrangebyscore', timeouts, '-inf', now)
  end
end

-- live pops waiters off the line until one whose place exists, takes
-- that place and returns the waiter, its place's value, nil and, for an
-- election, its value key's value (false when it has none); nothing when
-- the line has no live waiter; nil, nil and an error when the cluster
-- refused to read a place or a value. A releasing holder passes by its own place
-- (left by a Lock of its whose leave failed): it must not grant itself
-- the lock it releases. An unlock that finds the lock free and not its
-- own (one that ran late, after its resend) grants to whoever is first,
-- the caller included: its waiting Lock asked for the lock.
local function live(releasing)
  while true do
    local head = redis.call('lpop', queue)
    if not head then
      return nil
    end
    local value, entry = false, nil
    if office ~= '' then
      value = redis.pcall('get', values .. head)
    end
    if type(value) == 'table' then
      entry = value
    else
      entry = redis.pcall('getdel', places .. head)
    end
    if type(entry) == 'table' then
      -- Back at the head, with the line's expiry (LPOP may have emptied
      -- the list): that of its longest-lived waiter, as fairlock_acquire
      -- sets it.
      redis.call('lpush', queue, head)
      local last = redis.call('zrange', timeouts, -1, -1, 'withscores')
      if last[2] then
        redis.call('pexpireat', queue, math.ceil(tonumber(last[2])))
      end
      return nil, nil, entry.err
    end
    redis.call('zrem', timeouts, head)
    if entry and not (releasing and head == owner) then
      return head, entry, nil, value
    end
  end
end

-- takeToken takes the next fencing token (see fairlock_acquire), stores it
-- as the counter for a lease and returns it. A token is written with %.0f,
-- never tostring(): it has 16 digits, and Lua prints 14.
local function takeToken()
  local t = redis.call('time')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = math.max((tonumber(redis.call('get', fence)) or 0) + 1, now)
  redis.call('set', fence, string.format('%.0f', token), 'px', lease)
  return token
end

-- publish tells every observer of an election that its leader changed.
local function publish()
  redis.call(sharded and 'spublish' or 'publish', office, '-1')
end

-- grant makes head, a live waiter whose place held entry (and, for an
-- election, whose value key held value), the holder of the free lock for
-- its own grant lease, and returns its token and mark.
local function grant(head, entry, value)
  local mark, own = string.match(entry, '^f?([^/]*)/?(.*)$')
  local token = 0
  if string.sub(entry, 1, 1) == 'f' then
    token = takeToken()
    redis.call('hset', lock, '@token', string.format('%.0f', token))
  end
  redis.call('hset', lock, head, 1, '@' .. head, mark)
  if office ~= '' then
    redis.call('hset', lock, '@value', value or '')
    redis.call('del', values .. head)
  end
  redis.call('pexpire', lock, math.min(grantLease, tonumber(own) or grantLease))
  redis.call(sharded and 'spublish' or 'publish', prefix .. head, string.format('g%.0f:%s', token, mark))
  if office ~= '' then
    publish()
  end
  return token, mark
end

local function refused(err)
  return redis.error_reply('TRYAGAIN the place of the waiter at the head of the line is not on this node: ' .. err)
end

if not holds then
  if redis.call('exists', lock) == 0 then
    prune()
    local head, entry, err, value = live(false)
    if err then
      return refused(err)
    end
    if head then
      grant(head, entry, value)
    end
  end
  return {-1}
end
holds = tonumber(holds)
-- A copy that names a mark below the one the hold records was sent before
-- the attempt that recorded it, one that took, re-entered or reported a
-- later hold or level: a late copy of an earlier release (or give-back),
-- which must not release what that attempt holds. A live release names
-- the owner's latest attempt and is never refused for this.
if expect > 0 and holds ~= expect or named > 0 and tonumber(state[2] or 0) > named then
  return {-2}
end
-- Nobody in line, the uncontended case: the lock is free.
if not redis.call('lindex', queue, 0) then
  redis.call('del', lock)
  if office ~= '' then
    publish()
  end
  return 0
end
prune()
local head, entry, err, value = live(true)
if err then
  return refused(err)
end
redis.call('del', lock)
if head then
  local token, mark = grant(head, entry, value)
  return {0, head, token, mark}
end
if office ~= '' then
  publish()
end
return {0}
