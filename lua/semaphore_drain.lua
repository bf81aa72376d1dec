-- semaphore_drain: take every available permit of a counting semaphore.
--
-- KEYS[1]  permit count: a string integer, missing = 0, may be negative
--
-- Returns how many permits were taken; 0, changing nothing, when none is
-- available (the count is missing, zero or negative).
-- A permit count that is not an integer, or a key of another type, is a
-- WRONGTYPE error, raised before anything is written.

local permits = KEYS[1]

local raw = redis.call('get', permits)
if not raw then
  return 0
end
if not string.match(raw, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the semaphore key does not hold a permit count')
end
local available = tonumber(raw)
if available <= 0 then
  return 0
end
redis.call('set', permits, 0)
return available
