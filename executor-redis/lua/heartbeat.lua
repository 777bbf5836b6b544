-- heartbeat: renews many leases in one call. ARGV[3] = lease ms, then pairs of
-- id, fence. A lease counts only while its task is RUNNING with that fence;
-- a task whose key is not a hash, or whose record lost its state, is lost
-- (the reaper sets it aside when its lease entry expires).
-- Returns {lost ids, cancel-requested ids}.
local lease = nat(ARGV[3])
if not lease then return redis.error_reply('ERR heartbeat: lease is not a whole number') end
check_keys(2)
local now = now_ms()
local until_ms = int(now + lease)
local lost, cancel, renewed = {}, {}, {}
for i = 4, #ARGV, 2 do
  local id, fence = ARGV[i], ARGV[i + 1]
  local tkey = task_key(id)
  local rec = fields(tkey, 's', 'f', 'q')
  if rec and rec[1] == 'RUNNING' and rec[2] == fence then
    redis.call('HSET', tkey, 'l', until_ms)
    renewed[#renewed + 1] = until_ms
    renewed[#renewed + 1] = id
    if rec[3] == '1' then cancel[#cancel + 1] = id end
  else
    lost[#lost + 1] = id
  end
end
zadd_all(KEYS[2], renewed)
return {lost, cancel}
