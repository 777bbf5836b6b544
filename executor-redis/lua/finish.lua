-- finish: ends many attempts in one call. ARGV[3] = n, then 6 values per item:
-- id, fence, outcome (C completed, R retry, F failed, T timed out, E errored,
-- X cancelled, L released), retry delay ms, error text, nonce.
-- Only a RUNNING task with the same fence changes (invariant 2); the answer
-- per item is the new state or 'STALE'. A resent item (same nonce, already
-- applied) answers the state it produced instead of 'STALE'.
local TARGET = {C = 'COMPLETED', R = 'PENDING', F = 'FAILED', T = 'TIMEOUT', E = 'ERROR',
  X = 'CANCELLED', L = 'PENDING'}
local n = tonumber(ARGV[3])
local now = now_ms()
local out = {}
local woken = false
for i = 0, n - 1 do
  local b = 3 + i * 6
  local id, fence, outcome, delay, err, nonce =
    ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], tonumber(ARGV[b + 4]), ARGV[b + 5], ARGV[b + 6]
  local target = TARGET[outcome]
  local tkey = task_key(id)
  local st, f, w, u, a = unpack(redis.call('HMGET', tkey, 's', 'f', 'w', 'u', 'a'))
  if st == 'RUNNING' and f == fence and target then
    redis.call('ZREM', KEYS[2], id)
    redis.call('HDEL', tkey, 'w', 'l', 'q')
    if target == 'PENDING' then
      local due = now + (delay or 0)
      if outcome == 'L' then
        redis.call('HSET', tkey, 's', target, 'd', int(due), 'a', int(math.max((tonumber(a) or 1) - 1, 0)), 'u', nonce)
      else
        redis.call('HSET', tkey, 's', target, 'd', int(due), 'e', err, 'u', nonce)
      end
      redis.call('ZADD', KEYS[1], int(due), id)
      woken = true
    else
      if err ~= '' then
        redis.call('HSET', tkey, 's', target, 'z', int(now), 'e', err, 'u', nonce)
      else
        redis.call('HSET', tkey, 's', target, 'z', int(now), 'u', nonce)
      end
      redis.call('ZADD', finished_set(target), int(now), id)
    end
    move('RUNNING', target)
    out[#out + 1] = target
  elseif st == target and f == fence and not w and nonce ~= '' and u == nonce then
    out[#out + 1] = target
  else
    out[#out + 1] = 'STALE'
  end
end
flush_counts()
if woken then wake() end
return {int(now), out}
