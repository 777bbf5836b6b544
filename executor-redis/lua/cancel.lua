-- cancel: ARGV[3] id, ARGV[4] nonce. A waiting task becomes CANCELLED at
-- once; a running one gets its cancel flag, delivered by the next heartbeat.
-- Returns {'cancelled'} | {'requested'} | {'illegal', state} | {'missing'} |
-- {'corrupt', reason} for a key that is not a hash or a record without a
-- known state, which is set aside (common/06_records.lua; `delete` removes it).
local id, nonce = ARGV[3], ARGV[4]
check_keys()
local tkey = task_key(id)
local rec, reply = action_fields(id, tkey, 'k', 'u', 'g', 'v')
if not rec then return reply end
local st, k, u = rec[1], rec[2], rec[3]
if st == 'CREATED' or st == 'PENDING' then
  local now = now_ms()
  redis.call('HSET', tkey, 's', 'CANCELLED', 'z', int(now), 'u', nonce)
  remove_waiting(id, rec[4], rec[5])
  redis.call('ZADD', KEYS[4], int(now), id)
  if k and redis.call('HGET', KEYS[5], k) == id then redis.call('HDEL', KEYS[5], k) end
  move(st, 'CANCELLED')
  flush_counts()
  return {'cancelled'}
end
if st == 'RUNNING' then
  redis.call('HSET', tkey, 'q', '1')
  return {'requested'}
end
if st == 'CANCELLED' and u == nonce then return {'cancelled'} end
return {'illegal', st}
