-- part permits: reads a semaphore's permit count from the key permits into
-- total (0 when the key is absent, and raw then nil); a key that holds no
-- integer is refused with WRONGTYPE before anything is written.
local raw = redis.call('get', permits)
if raw and not string.match(raw, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the semaphore key does not hold a permit count')
end
local total = tonumber(raw or '0')
