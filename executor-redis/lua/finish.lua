-- finish: ends many attempts in one call. ARGV[3] = n, then 6 values per item:
-- id, fence, outcome (C completed, R retry, F failed, T timed out, E errored,
-- X cancelled, L released), retry delay ms, error text, nonce.
-- Only a RUNNING task with the same fence changes (invariant 2); the answer
-- per item is the new state or 'STALE'. A resent item (same nonce, already
-- applied) answers the state it produced instead of 'STALE'.
-- The worker and lease fields stay in the hash (one write fewer per task);
-- they mean something only while the task is RUNNING, and a record shows
-- them only then.
local TARGET = {C = 'COMPLETED', R = 'PENDING', F = 'FAILED', T = 'TIMEOUT', E = 'ERROR',
  X = 'CANCELLED', L = 'PENDING'}
local n = tonumber(ARGV[3])
local now = now_ms()
local now_s = int(now)
local out = {}
local woken = false
-- Index changes are gathered and written once per set.
local unleased, pending, finished = {}, {}, {}
for i = 0, n - 1 do
  local b = 3 + i * 6
  local id, fence, outcome, delay, err, nonce =
    ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], tonumber(ARGV[b + 4]), ARGV[b + 5], ARGV[b + 6]
  local target = TARGET[outcome]
  local tkey = task_key(id)
  local st, f, u, a = unpack(redis.call('HMGET', tkey, 's', 'f', 'u', 'a'))
  if st == 'RUNNING' and f == fence and target then
    unleased[#unleased + 1] = id
    if target == 'PENDING' then
      local due = now + (delay or 0)
      if outcome == 'L' then
        redis.call('HSET', tkey, 's', target, 'd', int(due), 'a', int(math.max((tonumber(a) or 1) - 1, 0)), 'u', nonce)
      else
        redis.call('HSET', tkey, 's', target, 'd', int(due), 'e', err, 'u', nonce)
      end
      pending[#pending + 1] = int(due)
      pending[#pending + 1] = id
      woken = true
    else
      if err ~= '' then
        redis.call('HSET', tkey, 's', target, 'z', now_s, 'e', err, 'u', nonce)
      else
        redis.call('HSET', tkey, 's', target, 'z', now_s, 'u', nonce)
      end
      local set = finished_set(target)
      finished[set] = finished[set] or {}
      local members = finished[set]
      members[#members + 1] = now_s
      members[#members + 1] = id
    end
    move('RUNNING', target)
    out[#out + 1] = target
  elseif st == target and f == fence and nonce ~= '' and u == nonce then
    out[#out + 1] = target
  else
    out[#out + 1] = 'STALE'
  end
end
if #unleased > 0 then redis.call('ZREM', KEYS[2], unpack(unleased)) end
if #pending > 0 then redis.call('ZADD', KEYS[1], unpack(pending)) end
for set, members in pairs(finished) do redis.call('ZADD', set, unpack(members)) end
flush_counts()
if woken then wake() end
return {int(now), out}
