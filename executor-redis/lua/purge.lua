-- purge: one step of deleting the keys of a namespace partition. ARGV[1] is
-- the SCAN cursor ('0' to start), ARGV[2] the pattern of the partition's keys
-- (they share a hash tag, so they live on this node, the one holding
-- KEYS[1]). Returns {next cursor, keys deleted}; the caller repeats until
-- the cursor is '0', so no single call holds the server for long.
local r = redis.call('SCAN', ARGV[1], 'MATCH', ARGV[2], 'COUNT', 1000)
local keys = r[2]
if #keys > 0 then redis.call('DEL', unpack(keys)) end
return {r[1], #keys}
