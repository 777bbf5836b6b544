-- run_now: ARGV[3] id. A waiting task (CREATED or PENDING) due after now
-- becomes due now: its `d` field and its score in its waiting level
-- (common.lua), so the next claim of its queue takes it. A task already
-- due is left as it is (its place among due tasks stays). Returns {'ok'} |
-- {'illegal', state} | {'missing'} | {'corrupt', reason} for a key that is
-- not a hash or a record without a known state, which is set aside
-- (common.lua), as requeue does.
local id = ARGV[3]
check_keys()
local tkey = task_key(id)
local rec = fields(tkey, 's', 'd', 'g', 'v')
local function corrupt(reason, is_hash)
  set_aside(id, nil, reason, is_hash, nil, now_ms())
  flush_counts()
  return {'corrupt', reason}
end
if not rec then return corrupt(not_a_hash(tkey), false) end
local st = rec[1]
if not st then
  if redis.call('EXISTS', tkey) == 0 then return {'missing'} end
  return corrupt('field `s` (state) is missing', true)
end
if not STATES[st] then return corrupt('unknown state `' .. shown(st) .. '`', true) end
if st ~= 'CREATED' and st ~= 'PENDING' then return {'illegal', st} end
local now = now_ms()
local due = nat(rec[2])
if due and due <= now then return {'ok'} end
redis.call('HSET', tkey, 'd', int(now))
local key, q, p = waiting_key(rec[3], rec[4])
add_waiting(key, q, p, {int(now), id})
wake()
return {'ok'}
