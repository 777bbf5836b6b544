-- cancel: ARGV[3] id, ARGV[4] nonce. A waiting task becomes CANCELLED at
-- once; a running one gets its cancel flag, delivered by the next heartbeat.
-- Returns {'cancelled'} | {'requested'} | {'illegal', state} | {'missing'}.
local id, nonce = ARGV[3], ARGV[4]
local tkey = task_key(id)
local st, k, u = unpack(redis.call('HMGET', tkey, 's', 'k', 'u'))
if not st then return {'missing'} end
if st == 'CREATED' or st == 'PENDING' then
  local now = now_ms()
  redis.call('HSET', tkey, 's', 'CANCELLED', 'z', int(now), 'u', nonce)
  redis.call('ZREM', KEYS[1], id)
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
