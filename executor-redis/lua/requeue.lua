-- requeue: ARGV[3] id, ARGV[4] nonce. A dead-lettered task goes back to
-- PENDING, due now, attempts reset; its last error stays for the record, and
-- the attempt that dead-lettered it is appended to the attempt log (`dead`).
-- Returns {'ok'} | {'illegal', state} | {'missing'} | {'corrupt', reason}
-- for a key that is not a hash or a record without a known state, which is
-- set aside (common/06_records.lua; `delete` removes it). A record with other broken
-- fields is requeued and set aside again by the next claim, with the reason.
local id, nonce = ARGV[3], ARGV[4]
check_keys()
local tkey = task_key(id)
local rec, reply = action_fields(id, tkey, 'u', 'g', 'v')
if not rec then return reply end
local st, u = rec[1], rec[2]
if st == 'FAILED' or st == 'TIMEOUT' or st == 'ERROR' then
  local now = now_ms()
  -- The attempt that dead-lettered the task stays in its attempt log.
  local dead = redis.call('HMGET', tkey, 'a', 'b', 'w', 'z', 'e', 'y')
  local log = append_attempt(dead[6], {attempt = nat(dead[1], U32) or 0, worker = dead[3],
    started_at = nat(dead[2]), ended_at = nat(dead[4]) or now, outcome = 'dead', error = log_error(dead[5])})
  redis.call('HSET', tkey, 's', 'PENDING', 'd', int(now), 'a', '0', 'u', nonce, 'y', log)
  redis.call('HDEL', tkey, 'z')
  redis.call('ZREM', KEYS[3], id)
  local key, q, p = waiting_key(rec[3], rec[4])
  add_waiting(key, q, p, {int(now), id})
  move(st, 'PENDING')
  flush_counts()
  wake()
  return {'ok'}
end
if st == 'PENDING' and u == nonce then return {'ok'} end
return {'illegal', st}
