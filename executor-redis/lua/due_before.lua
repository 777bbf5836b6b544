-- due_before: read only. Waiting tasks (CREATED/PENDING) of the partition due
-- before ARGV[3] ms, earliest first, at most ARGV[4]; ARGV[5] bounds the
-- index entries looked at (stale entries are skipped, not removed: nothing
-- changes). Returns {{id, fields...}...}.
local bound, limit, budget = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. bound, 'LIMIT', 0, budget)
local out = {}
for _, id in ipairs(ids) do
  local rec = record(task_key(id))
  if rec[1] == 'CREATED' or rec[1] == 'PENDING' then
    table.insert(rec, 1, id)
    out[#out + 1] = rec
    if #out >= limit then break end
  end
end
return out
