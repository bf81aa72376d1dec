-- election_proclaim: change the value of an election's leader.
--
-- KEYS[1]  the leadership's lock hash (see fairlock_acquire, ARGV[10]):
--          field = the leadership's hold id, '@token' = its term, '@value'
--          = its value, '@said' = the number of its last proclaim
-- ARGV[1]  the hold id of the leadership the caller believes it has
-- ARGV[2]  the term the caller believes it leads in (a decimal integer)
-- ARGV[3]  the proclaim's number: a decimal integer higher than the number
--          of every earlier proclaim of the owner
-- ARGV[4]  the new value
-- ARGV[5]  the channel on which every change of leader or value is
--          published, with "-1" (every observer of every process wakes)
-- ARGV[6]  "1": notify with SPUBLISH (Redis Cluster 7+), else PUBLISH
--
-- A proclaim names the state it expects: its hold leading in the term
-- ARGV[2], and no later proclaim of the owner in that term. A copy that
-- finds another leader, another term, or a later proclaim's number
-- changes nothing, however late it runs (a leadership the owner won
-- again has another hold id); a copy of the last proclaim run again (a
-- resend after a lost reply) finds its own number and changes nothing.
--
-- Returns 1 when the hold leads in ARGV[2] and its value is ARGV[4]
-- (set now, or by an earlier run of the same proclaim), 0 when it does
-- not lead in ARGV[2], -1 when a later proclaim of the owner has run.
-- A key of another type raises WRONGTYPE before anything is written.

local lock = KEYS[1]
local id, term, seq, value = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local channel, sharded = ARGV[5], ARGV[6] == '1'

local state = redis.call('hmget', lock, id, '@token', '@said', '@value')
if not state[1] or state[2] ~= term or not state[4] then
  return 0
end
local said = tonumber(state[3] or 0)
if seq < said then
  return -1
end
if seq == said then
  return 1
end
redis.call('hset', lock, '@value', value, '@said', ARGV[3])
if state[4] ~= value then
  redis.pcall(sharded and 'spublish' or 'publish', channel, '-1')
end
return 1
