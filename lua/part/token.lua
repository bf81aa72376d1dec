-- part token: takeToken(clock, lock, fence, lease, ...) takes the name's
-- next fencing token and returns it: the larger of the counter (key
-- fence) + 1 and the server's clock in microseconds (clock: a TIME reply
-- the script read already, or nil), stored back as the counter, which
-- lives lease ms, and as the hold's '@token' in hash lock, set in one
-- HSET with the field-value pairs in .... Tokens keep increasing while the
-- counter lives and, once it expired or was lost with Redis's data, as
-- long as the server's clock was not set back by more than the time since
-- the last token. Written with %.0f, never tostring(): a token has 16
-- digits, and Lua prints 14.
local function takeToken(clock, lock, fence, lease, ...)
  clock = clock or redis.call('time')
  local token = math.max((tonumber(redis.call('get', fence)) or 0) + 1, tonumber(clock[1]) * 1000000 + tonumber(clock[2]))
  local s = string.format('%.0f', token)
  redis.call('set', fence, s, 'px', lease)
  redis.call('hset', lock, '@token', s, ...)
  return token
end
