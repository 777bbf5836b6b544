-- heartbeat: renews many leases in one call. ARGV[3] = lease ms, then pairs of
-- id, fence. A lease counts only while its task is RUNNING with that fence.
-- Returns {lost ids, cancel-requested ids}.
local lease = tonumber(ARGV[3])
local now = now_ms()
local until_ms = int(now + lease)
local lost, cancel, renewed = {}, {}, {}
for i = 4, #ARGV, 2 do
  local id, fence = ARGV[i], ARGV[i + 1]
  local tkey = task_key(id)
  local st, f, q = unpack(redis.call('HMGET', tkey, 's', 'f', 'q'))
  if st == 'RUNNING' and f == fence then
    redis.call('HSET', tkey, 'l', until_ms)
    renewed[#renewed + 1] = until_ms
    renewed[#renewed + 1] = id
    if q == '1' then cancel[#cancel + 1] = id end
  else
    lost[#lost + 1] = id
  end
end
if #renewed > 0 then redis.call('ZADD', KEYS[2], unpack(renewed)) end
return {lost, cancel}
