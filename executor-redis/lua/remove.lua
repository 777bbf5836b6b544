-- remove: deletes a waiting task (CREATED/PENDING) and its index entries if
-- its fence is still ARGV[4]: the second step of a move to another tier, so
-- a task changed since it was copied (claimed, cancelled) stays. A key that
-- is not a task hash is never removed here.
-- ARGV[3] id. Returns 1 if deleted, else 0.
local id, fence = ARGV[3], ARGV[4]
check_keys()
local tkey = task_key(id)
local rec = fields(tkey, 's', 'f', 'k', 'g', 'v')
if not rec then return 0 end
local st, f, k = rec[1], rec[2], rec[3]
if st ~= 'CREATED' and st ~= 'PENDING' then return 0 end
if (f or '0') ~= fence then return 0 end
redis.call('DEL', tkey)
remove_waiting(id, rec[4], rec[5])
if k and redis.call('HGET', KEYS[5], k) == id then redis.call('HDEL', KEYS[5], k) end
move(st, nil)
flush_counts()
return 1
