-- limits: sets the fleet-wide limits of queue ARGV[3], run in
-- partition 0 with its script keys and, on a standalone server with several
-- partitions, the other partitions' lease ZSETs as KEYS[9..]. ARGV[4]
-- concurrency, ARGV[5] starts, ARGV[6] interval ms, ARGV[7] burst; all
-- empty: no limits (the queue's limits, bucket, running set and throttled
-- total go). The running set is rebuilt from the leases, so tasks running
-- when a limit is set count from the next claim on. A queue that had a rate
-- keeps its tokens (refilled at the old rate, capped at the new burst);
-- one that had none starts with a full bucket. Either way idle claimers
-- are woken: a raised or removed limit may let them take more. Returns 1.
local q, c, starts, per, burst = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
if not valid_queue(q) then return redis.error_reply('ERR limits: bad queue name') end
local t = redis.call('TYPE', KEYS[8]).ok
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[8] .. ' holds a ' .. t ..
    ', not a hash (edited by hand?): nothing was changed; delete that key and set the limits again')
end
repair(bucket_key(), 'hash')
repair(throttled_key(), 'hash')
repair(run_key(q), 'zset')
if c == '' and starts == '' then
  redis.call('HDEL', KEYS[8], q)
  redis.call('HDEL', bucket_key(), q)
  redis.call('HDEL', throttled_key(), q)
  redis.call('DEL', run_key(q))
  wake()
  return 1
end
local spec = c .. ',' .. starts .. ',' .. per .. ',' .. burst
local lim = parse_limits(spec)
if not lim then return redis.error_reply('ERR limits: bad limits ' .. shown(spec)) end
local now = now_ms()
if lim.starts then
  local micro = lim.burst * MICRO
  local old = limits_of(q)
  if old and old.starts then
    local had, ok = bucket_of(q, old, now)
    if ok then micro = math.min(had, micro) end
  end
  redis.call('HSET', bucket_key(), q, int(micro) .. ':' .. int(now))
else
  redis.call('HDEL', bucket_key(), q)
end
redis.call('DEL', run_key(q))
local members = (running_by_queue(all_leases(), {[q] = true}))[q] or {}
local pairs_ = {}
for _, tkey in ipairs(members) do
  pairs_[#pairs_ + 1] = int(now)
  pairs_[#pairs_ + 1] = tkey
end
zadd_all(run_key(q), pairs_)
redis.call('HSET', KEYS[8], q, spec)
wake()
return 1
