-- requeue: ARGV[3] id, ARGV[4] nonce. A dead-lettered task goes back to
-- PENDING, due now, attempts reset; its last error stays for the record.
-- Returns {'ok'} | {'illegal', state} | {'missing'}.
local id, nonce = ARGV[3], ARGV[4]
local tkey = task_key(id)
local st, u = unpack(redis.call('HMGET', tkey, 's', 'u'))
if not st then return {'missing'} end
if st == 'FAILED' or st == 'TIMEOUT' or st == 'ERROR' then
  local now = now_ms()
  redis.call('HSET', tkey, 's', 'PENDING', 'd', int(now), 'a', '0', 'u', nonce)
  redis.call('HDEL', tkey, 'z')
  redis.call('ZREM', KEYS[3], id)
  redis.call('ZADD', KEYS[1], int(now), id)
  move(st, 'PENDING')
  flush_counts()
  wake()
  return {'ok'}
end
if st == 'PENDING' and u == nonce then return {'ok'} end
return {'illegal', st}
