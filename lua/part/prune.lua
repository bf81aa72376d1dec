-- part prune: a fair lock's dead waiters leave the line: those whose
-- deadline in the zset timeouts has passed on the server's clock (their
-- process stopped refreshing it). Needs the locals queue and timeouts.
local clock = redis.call('time')
for _, w in ipairs(redis.call('zrangebyscore', timeouts, '-inf', tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000))) do
  redis.call('lrem', queue, 1, w)
  redis.call('zrem', timeouts, w)
end
