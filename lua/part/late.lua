-- part late: reads the server's clock into now (milliseconds) and refuses
-- a copy of the request that runs after its deadline (sent before a stall,
-- run after it, when its caller has given it up), or whose deadline lies
-- more than window ms ahead (the client's clock is off), with the error
-- 'LATE <now>' before anything is written: the client learns the server's
-- time from it (exactly.RequestWindow). Needs the locals deadline and
-- window (numbers).
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
if now > deadline or deadline - now > window then
  return redis.error_reply(string.format('LATE %d', now))
end
