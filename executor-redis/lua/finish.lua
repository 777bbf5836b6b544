-- finish: ends many attempts in one call. ARGV[3] = n, then 6 values per item:
-- id, fence, outcome (C completed, R retry, F failed, T timed out, E errored,
-- X cancelled, L released, P postponed), retry or postpone delay ms, error
-- text, nonce. Released and postponed attempts are not counted.
-- Only a RUNNING task with the same fence changes, so a late attempt never
-- overwrites a newer one; the answer
-- per item is the new state, 'STALE', or 'INVALID' for an item whose delay
-- is not a whole number (Rust checks it first; this keeps the script from
-- failing half way). A resent item (same nonce, already applied) answers
-- the state it produced instead of 'STALE'. A task whose key is not a hash
-- is 'STALE' (it is not RUNNING); the reaper sets it aside.
-- The worker and lease fields stay in the hash (one write fewer per task);
-- they mean something only while the task is RUNNING, and a record shows
-- them only then.
local TARGET = {C = 'COMPLETED', R = 'PENDING', F = 'FAILED', T = 'TIMEOUT', E = 'ERROR',
  X = 'CANCELLED', L = 'PENDING', P = 'PENDING'}
local n = nat(ARGV[3], 100000)
if not n or #ARGV < 3 + n * 6 then return redis.error_reply('ERR finish: wrong number of arguments') end
check_keys(1, 2, 3, 4)
local now = now_ms()
local now_s = int(now)
local out = {}
local woken = false
-- Index changes are gathered and written once per set; a task going back
-- to waiting goes to its own level (common/02_keys.lua).
local unleased, finished = {}, {}
local waiting = waiting_batch()
for i = 0, n - 1 do
  local b = 3 + i * 6
  local id, fence, outcome, delay_arg, err, nonce =
    ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5], ARGV[b + 6]
  local delay = nat(delay_arg)
  local target = TARGET[outcome]
  local tkey = task_key(id)
  -- State and fence first; the rest only where it is used (each field
  -- asked of a small hash is a scan of it): most attempts complete, in an
  -- unlimited queue, and need nothing more.
  local rec = fields(tkey, 's', 'f')
  local st, f = false, false
  if rec then st, f = rec[1], rec[2] end
  if delay_arg ~= '' and not delay then
    out[#out + 1] = 'INVALID'
  elseif st == 'RUNNING' and f == fence and target then
    local a, g, v = false, false, false
    if target == 'PENDING' or limits_on() then
      local more = redis.call('HMGET', tkey, 'a', 'g', 'v')
      a, g, v = more[1], more[2], more[3]
    end
    unleased[#unleased + 1] = id
    unrun(g or DEFAULT_QUEUE, id)
    if target == 'PENDING' then
      local due = now + (delay or 0)
      if outcome == 'L' then
        redis.call('HSET', tkey, 's', target, 'd', int(due), 'a', int(math.max((nat(a) or 1) - 1, 0)), 'u', nonce)
      elseif outcome == 'P' then
        redis.call('HSET', tkey, 's', target, 'd', int(due), 'a', int(math.max((nat(a) or 1) - 1, 0)), 'e', err,
          'u', nonce)
      else
        -- A retry: the attempt that ended goes to the attempt log (common/04_attempt_log.lua).
        local more = redis.call('HMGET', tkey, 'b', 'w', 'y')
        local log = append_attempt(more[3], {attempt = nat(a, U32) or 0, worker = more[2],
          started_at = nat(more[1]), ended_at = now, outcome = 'failed', error = log_error(err)})
        redis.call('HSET', tkey, 's', target, 'd', int(due), 'e', err, 'u', nonce, 'y', log)
      end
      local key, q, p = waiting_key(g, v)
      waiting.add(key, q, p, int(due), id)
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
  elseif st == target and f == fence and nonce ~= '' and redis.call('HGET', tkey, 'u') == nonce then
    out[#out + 1] = target
  else
    out[#out + 1] = 'STALE'
  end
end
zrem_all(KEYS[2], unleased)
waiting.flush()
for set, members in pairs(finished) do zadd_all(set, members) end
flush_counts()
if woken then wake() end
return {int(now), out}
