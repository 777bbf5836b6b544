-- list: read only. One page of the tasks in state ARGV[3], read from the
-- index ZSET in KEYS[1] that holds that state (due, lease, dead letter or
-- finished), in (score, id) order after the cursor (ARGV[4] score, ARGV[5]
-- id; '' for the first page; Rust checked both). At most ARGV[6] tasks, at
-- most ARGV[7] index entries looked at; only tasks named ARGV[8] unless it
-- is ''. Returns {at_end (0|1), last score,
-- last id, {{id, fields...}...}, {{id, reason}...}}: the last list holds the
-- entries of this index whose record is unreadable here (a key that is not
-- a hash, a record without a known state); records in the state whose other
-- fields do not parse are found by Rust.
local state, cscore, cid = ARGV[3], ARGV[4], ARGV[5]
local limit, budget = nat(ARGV[6], 100000), nat(ARGV[7], 100000)
local name = ARGV[8] or ''
if not (limit and budget and STATES[state] and (cscore == '' or tonumber(cscore))) then
  return redis.error_reply('ERR list: bad arguments')
end
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
local out, bad, last_score, last_id = {}, {}, cscore, cid
local looked = 0
for i = 1, #entries, 2 do
  local id, score = entries[i], entries[i + 1]
  looked = looked + 1
  local before = skip_upto and tonumber(score) == skip_upto and id <= cid
  last_score, last_id = score, id
  if not before then
    local tkey = task_key(id)
    -- With a name, two fields decide first: the whole record is read only
    -- for the entries kept.
    local rec = name == '' and record(tkey) or fields(tkey, 's', 'n')
    if rec and name ~= '' and rec[1] == state and rec[2] == name then rec = record(tkey) end
    if not rec then
      bad[#bad + 1] = {id, not_a_hash(tkey)}
    elseif rec[1] == state and (name == '' or rec[2] == name) then
      table.insert(rec, 1, id)
      out[#out + 1] = rec
      if #out >= limit then break end
    elseif rec[1] and not STATES[rec[1]] then
      bad[#bad + 1] = {id, 'unknown state `' .. shown(rec[1]) .. '`'}
    elseif not rec[1] and redis.call('EXISTS', tkey) == 1 then
      bad[#bad + 1] = {id, 'field `s` (state) is missing'}
    end
  end
end
local at_end = 0
if start + looked >= redis.call('ZCARD', KEYS[1]) then at_end = 1 end
return {at_end, last_score, last_id, out, bad}
