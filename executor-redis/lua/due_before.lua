-- due_before: read only. Waiting tasks (CREATED/PENDING) of the partition due
-- before ARGV[3] ms, earliest first within each waiting level (KEYS[1] and
-- every registered level of common/02_keys.lua), at most ARGV[4] per level; ARGV[5]
-- bounds the index entries looked at per level (stale entries are skipped,
-- not removed: nothing changes). Records that do not check out (common/06_records.lua)
-- are skipped too: they stay where they are until a claim sets them aside.
-- Rust merges the levels by due time. Returns {{id, fields..., attempt log}...}.
local bound, limit, budget = nat(ARGV[3]), nat(ARGV[4], 100000), nat(ARGV[5], 100000)
if not (bound and limit and budget) then return redis.error_reply('ERR due_before: bad arguments') end
local out = {}
local levels = all_levels()
table.insert(levels, 1, {KEYS[1]})
for _, lv in ipairs(levels) do
  local ids = redis.pcall('ZRANGEBYSCORE', lv[1], '-inf', '(' .. int(bound), 'LIMIT', 0, budget)
  if type(ids) == 'table' and not ids.err then
    local n = 0
    for _, id in ipairs(ids) do
      local rec = record(task_key(id))
      if rec and (rec[1] == 'CREATED' or rec[1] == 'PENDING') and not check(rec) then
        table.insert(rec, 1, id)
        rec[#rec + 1] = redis.call('HGET', task_key(id), 'y')
        out[#out + 1] = rec
        n = n + 1
        if n >= limit then break end
      end
    end
  end
end
return out
