-- reap: recovers up to ARGV[3] RUNNING tasks whose lease expired (their worker
-- is presumed dead). Past the deadline -> TIMEOUT; no attempts left -> FAILED;
-- else PENDING due now. The fence grows in every case, so the old worker's
-- late writes are refused (invariant 2). Returns {retried, failed, timed_out}.
local limit = tonumber(ARGV[3])
local now = now_ms()
local reason = 'lease expired (worker presumed dead)'
local retried, failed, timed_out = {}, {}, {}
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. int(now), 'LIMIT', 0, limit)
for _, id in ipairs(ids) do
  redis.call('ZREM', KEYS[2], id)
  local tkey = task_key(id)
  local st, f, a, m, x = unpack(redis.call('HMGET', tkey, 's', 'f', 'a', 'm', 'x'))
  if st == 'RUNNING' then
    local fence = int((tonumber(f) or 0) + 1)
    local deadline = tonumber(x)
    local target
    if deadline and now > deadline then
      target = 'TIMEOUT'
      timed_out[#timed_out + 1] = id
    elseif (tonumber(a) or 0) >= (tonumber(m) or 1) then
      target = 'FAILED'
      failed[#failed + 1] = id
    else
      target = 'PENDING'
      retried[#retried + 1] = id
    end
    if target == 'PENDING' then
      redis.call('HSET', tkey, 's', target, 'f', fence, 'd', int(now), 'e', reason)
      redis.call('ZADD', KEYS[1], int(now), id)
    else
      redis.call('HSET', tkey, 's', target, 'f', fence, 'z', int(now), 'e', reason)
      redis.call('ZADD', KEYS[3], int(now), id)
    end
    move('RUNNING', target)
  end
end
flush_counts()
if #retried > 0 then wake() end
return {retried, failed, timed_out}
