-- fairlock_unlock: release a fair lock's hold and grant the lock to the
-- first live waiter in line.
--
-- KEYS[1]  lock hash (see fairlock_acquire)
-- KEYS[2]  waiter list: owner ids, oldest first
-- KEYS[3]  waiter deadlines (zset of owner ids, server time in ms)
-- KEYS[4]  fencing counter: a grant to a waiter whose place asks for
--          fencing takes the next token, and the counter lives ARGV[2]
-- ARGV[1]  hold id
-- ARGV[2]  lease in ms: the fencing counter's lifetime
-- ARGV[3]  wake-up channel prefix; ARGV[6] place prefix (+ owner id)
-- ARGV[4]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[5]  grant lease in ms: the longest a grant lasts
-- ARGV[7]  election only: the channel told "-1" of every change of
--          leader (a release that frees or grants the lock)
-- ARGV[8]  election only: value key prefix (+ owner id): a grant moves
--          the grantee's value into the hash's '@value'
--
-- A hold id is never reused, so a release is idempotent however late it
-- runs: a copy that finds its id gone (released, granted on, expired)
-- changes nothing, and never touches a later hold of the same handle, nor
-- a grant that followed the first run.
--
-- Waiters whose deadline passed leave the line (not read when the line is
-- empty, the uncontended release). A grant pops owners off the line until
-- one whose place (and, for an election, value key) exists: a place that
-- lapsed is a dead waiter's, dropped, as is the releasing owner's own,
-- left by a Lock whose leave failed. It makes the hold id the place names
-- the holder for the place's grant lease (at most ARGV[5]), takes a token
-- when the place asks for one, and publishes "h" .. token .. ":" .. id ..
-- "#" .. attempt on the owner's channel (see rlock_unlock: a message read
-- late names an attempt that is not the waiter's last, and is never taken
-- for a grant to it; the previous version's "g" grants named a mark, and
-- a waiter of this one only wakes on them). The head's
-- keys are known only here and share the lock's hash tag; in a migrating
-- slot one not yet here fails MGET with nothing of the lock changed: the
-- head goes back, and the script answers TRYAGAIN for the caller to
-- resend.
--
-- Returns 0 when released with nobody in line (an integer costs Redis
-- less than a table), {0} when released with nobody live in line, {0,
-- grantee id, token, attempt} when granted (a grantee of the releasing process
-- completes its hold without waiting for the message), {-1} when the id
-- holds nothing (nothing changed). A key of another type: WRONGTYPE.

local lock, queue, timeouts, fence = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, lease, grantLease, places = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[5]), ARGV[6]
local office, values = ARGV[7] or '', ARGV[8]
local owner, publish = string.match(id, '^(.*):'), ARGV[4] == '1' and 'spublish' or 'publish'

if redis.call('hexists', lock, id) == 0 then
  return {-1}
end
if not redis.call('lindex', queue, 0) then
  redis.call('del', lock)
  if office ~= '' then
    redis.pcall(publish, office, '-1')
  end
  return 0
end

-- part: prune
-- part: token

local head = redis.call('lpop', queue)
while head do
  local got = redis.pcall('mget', places .. head, (values or places) .. head)
  if got.err then
    -- Back at the head, the line living as long as its last waiter (LPOP
    -- may have emptied the list), as fairlock_acquire sets it.
    redis.call('lpush', queue, head)
    local last = redis.call('zrange', timeouts, -1, -1, 'withscores')[2]
    if last then
      redis.call('pexpireat', queue, math.ceil(tonumber(last)))
    end
    return redis.error_reply('TRYAGAIN the place of the waiter at the head of the line is not on this node: ' .. got.err)
  end
  redis.call('zrem', timeouts, head)
  -- The hold id begins with the owner id: a leading "f" asks for a token
  -- (a host name may begin with f itself). A place of a version before
  -- hold ids (a mark) is passed over like a dead waiter's: that waiter's
  -- next attempt joins the line again.
  local body, own = string.match(got[1] or '', '^(.*)/(%d+)$')
  local fenced = body and string.sub(body, 1, #head + 2) == 'f' .. head .. ':'
  local named = body and (fenced and string.sub(body, 2) or body)
  local grantee, attempt = string.match(named or '', '^(.*)#(%d+)$')
  if grantee and head ~= owner and string.sub(grantee, 1, #head + 1) == head .. ':' then
    local token = 0
    redis.call('del', lock, places .. head)
    if fenced then
      token = takeToken(nil, lock, fence, lease, grantee, 1)
    else
      redis.call('hset', lock, grantee, 1)
    end
    redis.call('pexpire', lock, math.min(grantLease, tonumber(own)))
    redis.pcall(publish, ARGV[3] .. head, string.format('h%.0f:%s', token, named))
    if office ~= '' then
      redis.call('hset', lock, '@value', got[2] or '')
      redis.call('del', values .. head)
      redis.pcall(publish, office, '-1')
    end
    return {0, grantee, token, attempt}
  end
  redis.call('del', places .. head)
  head = redis.call('lpop', queue)
end

redis.call('del', lock)
if office ~= '' then
  redis.pcall(publish, office, '-1')
end
return {0}
