-- part later: later() says whether the lock hash lock has a hold of the
-- caller's handle that began after this attempt's wait (the number after
-- the owner id in its hold id is higher): the attempt ran late, after its
-- wait gave up, and must join no line. placedLater(value) says the same
-- of value, the owner's place in line ('[f]<hold id>#<attempt>[/<grant
-- lease>]', or nil): a later wait of the handle is in line, and the
-- attempt must leave its place as it found it. Needs the locals lock,
-- owner, id.
local function later()
  local mine = tonumber(string.sub(id, #owner + 2))
  for _, field in ipairs(redis.call('hkeys', lock)) do
    -- A field is a hold id, or a read-write lock's 'r:'/'w:' and one (a
    -- host may be called r or w: both readings are tried).
    for _, f in ipairs({field, string.sub(field, 3)}) do
      if string.sub(f, 1, #owner + 1) == owner .. ':' and (tonumber(string.sub(f, #owner + 2)) or 0) > mine then
        return true
      end
    end
  end
  return false
end

local function placedLater(value)
  if not value then
    return false
  end
  local named = string.sub(value, 1, #owner + 2) == 'f' .. owner .. ':' and string.sub(value, 2) or value
  local n = tonumber(string.match(named, '^.*:(%d+)#') or '')
  return n ~= nil and n > tonumber(string.sub(id, #owner + 2))
end
