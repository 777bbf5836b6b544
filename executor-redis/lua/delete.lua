-- delete: ARGV[3] id. Deletes one task in any state, readable or not, even a
-- key that is not a hash, with its index entries, its debounce binding and
-- its count: the way out for a record that no longer parses. A worker still
-- running it finds it gone: its heartbeat loses the lease and its finish is
-- refused as stale. Returns 1 if the key existed, else 0 (a left-over index
-- entry is dropped all the same).
local id = ARGV[3]
check_keys()
local tkey = task_key(id)
local t = redis.call('TYPE', tkey).ok
local index = index_of(id)
if t == 'none' and not index then return 0 end
local st, k = false, false
if t == 'hash' then
  local rec = redis.call('HMGET', tkey, 's', 'k')
  st, k = rec[1], rec[2]
end
-- Counted under its own state when that state's index holds it; otherwise
-- under a state of the index it was found in (common.lua).
local from
if STATES[st or ''] and redis.call('ZSCORE', KEYS[INDEX_OF[st]], id) then
  from = st
else
  from = counted(index, nil)
end
for i = 1, 4 do redis.call('ZREM', KEYS[i], id) end
if k and redis.call('HGET', KEYS[5], k) == id then redis.call('HDEL', KEYS[5], k) end
redis.call('DEL', tkey)
move(from, nil)
flush_counts()
if t == 'none' then return 0 end
return 1
