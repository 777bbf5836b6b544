-- trim: deletes at most ARGV[5] finished tasks: COMPLETED and CANCELLED ones
-- finished more than ARGV[3] ms ago, dead-lettered ones more than ARGV[4] ms
-- ago ('' keeps them). Returns the number deleted.
local now = now_ms()
local limit = tonumber(ARGV[5])
local removed = 0
local function trim(set, keep_ms)
  if removed >= limit then return end
  local ids = redis.call('ZRANGEBYSCORE', set, '-inf', '(' .. int(now - keep_ms), 'LIMIT', 0, limit - removed)
  if #ids == 0 then return end
  for _, id in ipairs(ids) do
    local tkey = task_key(id)
    local st = redis.call('HGET', tkey, 's')
    redis.call('DEL', tkey)
    if st then move(st, nil) end
  end
  redis.call('ZREM', set, unpack(ids))
  removed = removed + #ids
end
trim(KEYS[4], tonumber(ARGV[3]))
if ARGV[4] ~= '' then trim(KEYS[3], tonumber(ARGV[4])) end
flush_counts()
return removed
