-- part aim: a force-unlock runs once per receipt and deletes only the
-- holds its caller read. A repeated run (a retry after a lost reply)
-- returns its first run's outcome, kept in the string receipt. Then
-- aimed says whether the hash lock's hold fields (all but 'mode' and the
-- '@' fields) are exactly the names in ARGV[aim] onwards: hold ids are
-- never reused, so a copy that Redis runs late, after the lock was
-- released and taken again, finds others and must change nothing. Needs
-- the locals lock, receipt and aim; defines fields (the hash's field
-- names), moded (it has 'mode') and aimed.
local seen = redis.call('get', receipt)
if seen then
  return tonumber(seen)
end
local fields, holds, n, moded = redis.call('hkeys', lock), {}, 0, false
for _, field in ipairs(fields) do
  if field == 'mode' then
    moded = true
  elseif string.sub(field, 1, 1) ~= '@' then
    holds[field], n = true, n + 1
  end
end
local aimed = n == #ARGV - aim + 1
for i = aim, #ARGV do
  aimed = aimed and holds[ARGV[i]] ~= nil
end
