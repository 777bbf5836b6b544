-- run_now: ARGV[3] id. A waiting task (CREATED or PENDING) due after now
-- becomes due now: its `d` field and its score in its waiting level
-- (common/02_keys.lua), so the next claim of its queue takes it. A task already
-- due is left as it is (its place among due tasks stays). Returns {'ok'} |
-- {'illegal', state} | {'missing'} | {'corrupt', reason} for a key that is
-- not a hash or a record without a known state, which is set aside
-- (common/06_records.lua), as requeue does.
local id = ARGV[3]
check_keys()
local tkey = task_key(id)
local rec, reply = action_fields(id, tkey, 'd', 'g', 'v')
if not rec then return reply end
local st = rec[1]
if st ~= 'CREATED' and st ~= 'PENDING' then return {'illegal', st} end
local now = now_ms()
local due = nat(rec[2])
if due and due <= now then return {'ok'} end
redis.call('HSET', tkey, 'd', int(now))
local key, q, p = waiting_key(rec[3], rec[4])
add_waiting(key, q, p, {int(now), id})
wake()
return {'ok'}
