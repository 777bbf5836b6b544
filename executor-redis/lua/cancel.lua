-- cancel: ARGV[3] id, ARGV[4] nonce. A waiting task becomes CANCELLED at
-- once; a running one gets its cancel flag, delivered by the next heartbeat.
-- Returns {'cancelled'} | {'requested'} | {'illegal', state} | {'missing'} |
-- {'corrupt', reason} for a key that is not a hash or a record without a
-- known state, which is set aside (common.lua; `delete` removes it).
local id, nonce = ARGV[3], ARGV[4]
check_keys()
local tkey = task_key(id)
local rec = fields(tkey, 's', 'k', 'u', 'g', 'v')
-- A record it cannot read is set aside (common.lua) and answered as corrupt.
local function corrupt(reason, is_hash)
  set_aside(id, nil, reason, is_hash, nil, now_ms())
  flush_counts()
  return {'corrupt', reason}
end
if not rec then return corrupt(not_a_hash(tkey), false) end
local st, k, u = rec[1], rec[2], rec[3]
if not st then
  if redis.call('EXISTS', tkey) == 0 then return {'missing'} end
  return corrupt('field `s` (state) is missing', true)
end
if not STATES[st] then return corrupt('unknown state `' .. shown(st) .. '`', true) end
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
