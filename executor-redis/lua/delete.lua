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
local st, k, g, v = false, false, false, 'x'
if t == 'hash' then
  local rec = redis.call('HMGET', tkey, 's', 'k', 'g', 'v')
  st, k, g, v = rec[1], rec[2], rec[3], rec[4]
end
-- Counted under its own state when that state's index holds it; otherwise
-- under a state of the index it was found in (common/03_counts.lua, `counted`).
local from
local home = STATES[st or ''] and KEYS[INDEX_OF[st]]
if home == KEYS[1] then home = waiting_key(g, v) end
if home and type(redis.pcall('ZSCORE', home, id)) == 'string' then
  from = st
else
  from = counted(index, nil)
end
for i = 2, 4 do redis.call('ZREM', KEYS[i], id) end
-- Out of its level, or of every level when its `g`/`v` do not parse.
remove_waiting(id, g, v)
if t == 'hash' then unrun(g or DEFAULT_QUEUE, id) end
if k and redis.call('HGET', KEYS[5], k) == id then redis.call('HDEL', KEYS[5], k) end
redis.call('DEL', tkey)
move(from, nil)
flush_counts()
if t == 'none' then return 0 end
return 1
