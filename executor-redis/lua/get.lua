-- get: read only. The record of task ARGV[3] (common/04_records.lua) with
-- its attempt log: {FIELDS..., log} for a record, {} for no task, {reason}
-- for a key that holds no record.
local tkey = task_key(ARGV[3])
local stored = load(tkey)
if stored == nil then return {} end
if stored == false then return {not_a_record(tkey)} end
local out = record(tkey)
out[#out + 1] = fields(tkey, 'y')[1]
return out
