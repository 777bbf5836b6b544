-- reap: recovers up to ARGV[3] RUNNING tasks whose lease expired (their worker
-- is presumed dead). Past the deadline -> TIMEOUT; no attempts left -> FAILED;
-- else PENDING due now, the lost attempt appended to the attempt log
-- (`lease_expired`, common/04_attempt_log.lua). The fence grows in every
-- case, so the old worker's late writes are refused. A lease
-- entry whose record is corrupt is set aside (common/06_records.lua); one
-- without a task is dropped.
-- Returns {retried, failed, timed_out, {{id, reason}...} set aside}.
local limit = nat(ARGV[3], 100000)
if not limit then return redis.error_reply('ERR reap: limit is not a whole number') end
check_keys()
local now = now_ms()
local reason = 'lease expired (worker presumed dead)'
local retried, failed, timed_out, aside = {}, {}, {}, {}
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', '(' .. int(now), 'LIMIT', 0, limit)
zrem_all(KEYS[2], ids)
for _, id in ipairs(ids) do
  local tkey = task_key(id)
  local verdict, rec = inspect(id, 2, now)
  if verdict == 'ok' then
    local fence = int((nat(rec[6]) or 0) + 1)
    local deadline = nat(rec[11])
    local target
    if deadline and now > deadline then
      target = 'TIMEOUT'
      timed_out[#timed_out + 1] = id
    elseif (nat(rec[4]) or 0) >= (nat(rec[5]) or 1) then
      target = 'FAILED'
      failed[#failed + 1] = id
    else
      target = 'PENDING'
      retried[#retried + 1] = id
    end
    if target == 'PENDING' then
      local log = append_attempt(redis.call('HGET', tkey, 'y'), {attempt = nat(rec[4], U32) or 0,
        worker = rec[15], started_at = nat(rec[9]), ended_at = now, outcome = 'lease_expired', error = reason})
      redis.call('HSET', tkey, 's', target, 'f', fence, 'd', int(now), 'e', reason, 'y', log)
      local key, q, p = waiting_key(rec[19], rec[20])
      add_waiting(key, q, p, {int(now), id})
    else
      redis.call('HSET', tkey, 's', target, 'f', fence, 'z', int(now), 'e', reason)
      redis.call('ZADD', KEYS[3], int(now), id)
    end
    move('RUNNING', target)
    unrun(rec[19] or DEFAULT_QUEUE, id)
  elseif verdict == 'aside' then
    aside[#aside + 1] = {id, rec}
  end
end
flush_counts()
if #retried > 0 then wake() end
return {retried, failed, timed_out, aside}
