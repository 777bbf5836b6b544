-- list: one page of the tasks in state ARGV[3], read from the index ZSET in
-- KEYS[1] that holds that state (due, lease, dead letter or finished), in
-- (score, id) order after the cursor (ARGV[4] score, ARGV[5] id; '' for the
-- first page). At most ARGV[6] tasks, at most ARGV[7] index entries looked
-- at. Returns {at_end (0|1), last score, last id, {{id, fields...}...}}.
local state, cscore, cid = ARGV[3], ARGV[4], ARGV[5]
local limit, budget = tonumber(ARGV[6]), tonumber(ARGV[7])
local start, skip_upto = 0, nil
if cscore ~= '' then
  local s = tonumber(cscore)
  local rank = redis.call('ZRANK', KEYS[1], cid)
  if rank and tonumber(redis.call('ZSCORE', KEYS[1], cid)) == s then
    start = rank + 1
  else
    -- The cursor's task left the set: restart at its score, skip what sorts before it.
    start = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. cscore)
    skip_upto = s
  end
end
local entries = redis.call('ZRANGE', KEYS[1], start, start + budget - 1, 'WITHSCORES')
local out, last_score, last_id = {}, cscore, cid
local looked = 0
for i = 1, #entries, 2 do
  local id, score = entries[i], entries[i + 1]
  looked = looked + 1
  local before = skip_upto and tonumber(score) == skip_upto and id <= cid
  last_score, last_id = score, id
  if not before then
    local rec = record(task_key(id))
    if rec[1] == state then
      table.insert(rec, 1, id)
      out[#out + 1] = rec
      if #out >= limit then break end
    end
  end
end
local at_end = 0
if start + looked >= redis.call('ZCARD', KEYS[1]) then at_end = 1 end
return {at_end, last_score, last_id, out}
