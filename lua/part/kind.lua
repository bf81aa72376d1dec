-- part kind: a name belongs to one kind of primitive for as long as any
-- key of it exists. Pasted where the script would create the primitive's
-- main key (it is absent), it refuses the name with WRONGTYPE, before
-- anything is written, while a key of another kind exists: the keys
-- KEYS[others] to KEYS[others + kinds - 1], which the caller passes (a
-- leased semaphore's total, a read-write lock's lines, a mutex's line,
-- ...; kinds 0: none). One EXISTS; the loop runs only to name the key.
if kinds > 0 and redis.call('exists', unpack(KEYS, others, others + kinds - 1)) > 0 then
  for i = others, others + kinds - 1 do
    if redis.call('exists', KEYS[i]) == 1 then
      return redis.error_reply('WRONGTYPE the name is used by another kind of primitive, which has the key ' .. KEYS[i])
    end
  end
end
