-- fairlock_acquire: take a fair (FIFO) lock, or wait in line.
--
-- KEYS[1]  lock hash: field = the holder's hold id, value = 1 (re-entry
--          is counted in the process); '@token' its fencing token; for an
--          election, '@value' the leader's value
-- KEYS[2]  waiter list: owner ids (a hold id's handle part), oldest first
-- KEYS[3]  waiter deadlines: zset of owner ids, scored in server time (ms)
-- KEYS[4]  fencing counter: the name's last token, kept for a lease
-- KEYS[5]  the owner's place: ["f" (a grant takes a token)] hold id "#"
--          ARGV[13] "/" grant lease (the shorter of ARGV[7] and ARGV[4]):
--          how long it lives and a grant to it lasts
-- KEYS[6]  election only: the owner's value key (its value while in line)
-- KEYS[6 or 7..] keys other kinds keep under the name (see part kind)
-- ARGV[1]  hold id: "<owner id>:<n>", new for each wait, never reused
-- ARGV[2]  lease in ms, and the fencing counter's lifetime
-- ARGV[3]  "1": a first acquisition takes a fencing token
-- ARGV[4]  waiter timeout in ms: a refused attempt joins the end of the
--          line (or keeps its place) until now + ARGV[4]; "0" never joins
-- ARGV[5]  wake-up channel prefix; ARGV[8] place prefix (+ owner id)
-- ARGV[6]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
-- ARGV[7]  grant lease in ms: the longest a grant lasts
-- ARGV[9]  the attempt's deadline, server time in ms (see part late)
-- ARGV[10..12] election only: the channel told "-1" of every change of
--          leader; the candidate's value, kept in KEYS[6] for ARGV[4]
--          while it waits; the value key prefix (+ owner id)
-- ARGV[13] the attempt's number, which a grant's message names
--
-- A hold of ARGV[1] found here is this wait's own (ids are never reused):
-- a resend, or a grant not completed: reported, its lease re-armed. Else
-- the caller takes the lock only when it is free with nobody live before
-- it. Free with a live head (a lease ran out), it is granted to the head
-- as fairlock_unlock grants; dead heads are dropped first. The head's
-- keys share the lock's hash tag; in a migrating slot one not yet here
-- fails MGET: TRYAGAIN, with only dead waiters dropped.
--
-- Returns 1 for a first acquisition without a token, the token (an
-- integer above 1) for a first acquisition with one, {1, 1, token} when
-- ARGV[1] held already (token 0 when it has none), else {0, wait}: the holder's remaining lease, -1
-- unknown. WRONGTYPE, with nothing written, for a key of another type, a
-- read-write lock's hash, an election's as a fair lock, a lock's without
-- '@value' as an election.

local lock, queue, timeouts, fence, place = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, lease, fencing, patience = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local grantLease, places, office, values = tonumber(ARGV[7]), ARGV[8], ARGV[10] or '', ARGV[12] ~= '' and ARGV[12] or nil
local owner, publish = string.match(id, '^(.*):'), ARGV[6] == '1' and 'spublish' or 'publish'
local deadline, window = tonumber(ARGV[9]), 10000
-- part: late
-- part: token

local ttl = redis.call('pttl', lock)
if ttl == -2 then
  local others, kinds = office == '' and 6 or 7, #KEYS - (office == '' and 5 or 6)
-- part: kind
end

local state = redis.call('hmget', lock, id, 'mode', '@value', '@token')
local wrong = state[2] and 'has a mode: the name is used by a read-write lock'
  or office == '' and state[3] and 'has a value: the name is used by an election'
  or office ~= '' and not state[3] and redis.call('exists', lock) == 1 and 'has no value: the name is used by another kind of lock'
if wrong then
  return redis.error_reply('WRONGTYPE the lock hash ' .. wrong)
end
if state[1] then
  redis.call('pexpire', lock, lease)
  return {1, 1, tonumber(state[4]) or 0}
end

-- give makes hold id who the holder for ttl ms, with the next fencing
-- token if fenced, and for an election the value of valueKey (deleted).
local function give(who, fenced, ttl, value, valueKey)
  local token = 0
  if fenced then
    token = takeToken(clock, lock, fence, lease, who, 1)
  else
    redis.call('hset', lock, who, 1)
  end
  redis.call('pexpire', lock, ttl)
  if office ~= '' then
    redis.call('hset', lock, '@value', value or '')
    redis.call('del', valueKey)
    redis.pcall(publish, office, '-1')
  end
  return token
end

-- Dead waiters leave (read from an empty line too: WRONGTYPE comes first).
local dead = redis.call('zrangebyscore', timeouts, '-inf', now)
for _, w in ipairs(dead) do
  redis.call('lrem', queue, 1, w)
  redis.call('zrem', timeouts, w)
end

local free, head, entry, headValue = ttl == -2, redis.call('lindex', queue, 0), nil, nil
while free and head and head ~= owner do
  local got = redis.pcall('mget', places .. head, (values or places) .. head)
  if got.err then
    return redis.error_reply('TRYAGAIN the place of the waiter at the head of the line is not on this node: ' .. got.err)
  end
  entry, headValue = got[1], got[2]
  -- A place before hold ids (a mark) is passed over like a dead one.
  local e = entry or ''
  if (string.find(e, head .. ':', 1, true) == 1 or string.find(e, 'f' .. head .. ':', 1, true) == 1) and string.find(e, '/%d+$') then
    break
  end
  redis.call('lpop', queue)
  redis.call('zrem', timeouts, head)
  head = redis.call('lindex', queue, 0)
end
local taking = free and (not head or head == owner)
-- part: later
if patience > 0 and not taking and not later() then
  -- ZADD counts a waiter new to the line: only then does it join the end.
  if redis.call('zadd', timeouts, now + patience, owner) == 1 then
    redis.call('rpush', queue, owner)
  end
  local own = math.min(patience, grantLease)
  local prev = redis.call('set', place, (fencing and 'f' or '') .. id .. '#' .. (ARGV[13] or '0') .. '/' .. own, 'px', own, 'get')
  if placedLater(prev) then
    -- Run late, after its wait gave up: a later wait's place stays.
    redis.call('set', place, prev, 'px', own)
  elseif office ~= '' then
    redis.call('set', KEYS[6], ARGV[11], 'px', patience)
  end
  -- The line lives as long as its longest-lived waiter.
  local last = math.ceil(tonumber(redis.call('zrange', timeouts, -1, -1, 'withscores')[2]))
  redis.call('pexpireat', queue, last)
  redis.call('pexpireat', timeouts, last)
end
if not free then
  return {0, ttl}
end
-- Free: the lock goes to the caller, or to the live head in line.
if head then
  redis.call('lpop', queue)
  redis.call('zrem', timeouts, head)
  redis.call('del', places .. head)
end
if taking then
  local token = give(id, fencing, lease, ARGV[11], KEYS[6])
  return token == 0 and 1 or token
end
-- A leading "f" asks for a token (a host name may begin with f itself).
local body, own = string.match(entry, '^(.*)/(%d+)$')
local fenced = string.sub(body, 1, #head + 2) == 'f' .. head .. ':'
local named = fenced and string.sub(body, 2) or body
own = math.min(grantLease, tonumber(own))
local token = give(string.match(named, '^(.*)#%d+$') or named, fenced, own, headValue, (values or '') .. head)
redis.pcall(publish, ARGV[5] .. head, string.format('h%.0f:%s', token, named))
return {0, own}
