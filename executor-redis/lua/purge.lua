-- purge: deletes every key matching ARGV[1] (one namespace partition, whose
-- keys share a hash tag and so live on this node). An admin and test tool:
-- it scans the node's keyspace inside one script call.
local cursor, n = '0', 0
repeat
  local r = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 1000)
  cursor = r[1]
  for _, k in ipairs(r[2]) do
    redis.call('DEL', k)
    n = n + 1
  end
until cursor == '0'
return n
