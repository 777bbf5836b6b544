-- limits_tidy: run by the leader at each housekeeping tick, with the keys
-- of limits.lua. Makes the running set of every limited queue exactly its
-- RUNNING tasks in the leases: a member whose task left RUNNING by a path
-- that missed it (a hand edit, a record set aside with an unreadable
-- queue) goes, a running task missing from it joins. Also deletes a
-- bucket, throttled or running key of the wrong type (`repair` in common/05_limits.lua).
-- Nothing to do, one EXISTS, while no queue has limits. Returns the number
-- of entries it corrected.
if redis.pcall('EXISTS', KEYS[8]) ~= 1 or redis.call('TYPE', KEYS[8]).ok ~= 'hash' then return 0 end
local fixed = 0
if repair(bucket_key(), 'hash') then fixed = fixed + 1 end
if repair(throttled_key(), 'hash') then fixed = fixed + 1 end
local limited = {}
for _, q in ipairs(redis.call('HKEYS', KEYS[8])) do
  if valid_queue(q) then
    limited[q] = true
    if repair(run_key(q), 'zset') then fixed = fixed + 1 end
  end
end
local now = int(now_ms())
local truth = running_by_queue(all_leases(), limited)
for q in pairs(limited) do
  local want = {}
  for _, tkey in ipairs(truth[q] or {}) do want[tkey] = true end
  local have = {}
  for _, tkey in ipairs(redis.call('ZRANGE', run_key(q), 0, -1)) do
    have[tkey] = true
    if not want[tkey] then
      redis.call('ZREM', run_key(q), tkey)
      fixed = fixed + 1
    end
  end
  for tkey in pairs(want) do
    if not have[tkey] then
      redis.call('ZADD', run_key(q), now, tkey)
      fixed = fixed + 1
    end
  end
end
if fixed > 0 then
  redis.log(redis.LOG_WARNING, 'executor-redis: limits_tidy corrected ' .. fixed .. ' entries')
end
return fixed
