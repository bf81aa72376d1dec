-- part token: takeToken(clock, lock, fence, lease, ...) takes the name's
-- next fencing token and returns it: the larger of the counter (key
-- fence) + 1 and the server's clock in microseconds (clock: a TIME reply
-- the script read already, or nil), stored back as the counter, which
-- lives lease ms, and as the hold's '@token' in hash lock, set in one
-- HSET with the field-value pairs in .... Tokens keep increasing while the
-- counter lives and, once it expired or was lost with Redis's data, as
-- long as the server's clock was not set back by more than the time since
-- the last token. Written as the clock's digits (seconds, then the
-- microseconds padded to six; string.format costs Redis twice what that
-- does) or with %.0f, never tostring(): a token has 16 digits, and Lua
-- prints 14.
local function takeToken(clock, lock, fence, lease, ...)
  clock = clock or redis.call('time')
  -- The clock is ahead of the counter unless two tokens fall in one
  -- microsecond or the clock was set back: one SET ... GET then does.
  local token = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  local s = clock[1] .. string.sub('00000' .. clock[2], -6)
  local last = tonumber(redis.call('set', fence, s, 'px', lease, 'get'))
  if last and last >= token then
    token = last + 1
    s = string.format('%.0f', token)
    redis.call('set', fence, s, 'px', lease)
  end
  redis.call('hset', lock, '@token', s, ...)
  return token
end
