-- submit: many tasks in one call. ARGV[3] = n, then 16 values per task:
-- id, name, payload, due kind (n|a|t), due value, max_attempts, max_duration,
-- timeout, retry, mode (p|i|d), debounce key, window, max_wait, nonce, queue
-- ('' for the default queue), priority ('' for 0). A task waits in its
-- level's ZSET (common/02_keys.lua); a debounced repeat moves the bound
-- task within the bound task's own level.
-- Returns {now, outcomes}, an outcome per task: 1 when this call created
-- the task under its own id (the common answer, kept short: a batch of 500
-- answers in one small reply), else {outcome, id[, reason]}: outcome
-- created (a resend, or a debounce that created the bound task), existing,
-- debounced, duplicate, corrupt (the id's key holds something that is not a
-- task hash) or invalid (an argument that is not a whole number: Rust
-- checks first, this keeps the script from failing half way).
-- The nonce is stored in the new task's `h` field, which no other script
-- writes: a resent call (same nonce) answers `created` again, not
-- `duplicate`, `existing` or `debounced`, whatever happened to the task since.
-- A debounce key bound to a corrupt record sets that record aside
-- (common/06_records.lua) and creates a new task, as if the key were free.
local n = nat(ARGV[3], 100000)
if not n or #ARGV < 3 + n * 16 then return redis.error_reply('ERR submit: wrong number of arguments') end
-- A plain or idempotent batch writes only the due index (and the counts);
-- a debounce item may write the debounce hash and set a record aside.
local debounces = false
for i = 0, n - 1 do
  if ARGV[3 + i * 16 + 10] == 'd' then debounces = true end
end
if debounces then check_keys() else check_keys(1) end
local now = now_ms()
local now_s = int(now)
local out = {}
-- Due entries are written with one ZADD per level at the end.
local waiting = waiting_batch()
local DEBOUNCED = {'s', 'c', 'h', 'g', 'v'}
-- One EXISTS of every task key first: when none exists (a batch of new
-- ids, the common case) no task needs a call of its own to know its id is
-- free, only a look at the ids this call created.
local fresh = true
for i = 0, n - 1, 1000 do
  local keys = {}
  for j = i, math.min(i + 999, n - 1) do keys[#keys + 1] = task_key(ARGV[3 + j * 16 + 1]) end
  if redis.call('EXISTS', unpack(keys)) > 0 then fresh = false end
end
local made = {}

-- Why the arguments of one task are unusable, or nil.
local function bad_args(due_kind, due_value, max_attempts, max_duration, timeout, mode, window, max_wait, queue,
    priority)
  if not (due_kind == 'n' or nat(due_value)) then return 'due' end
  if not nat(max_attempts, U32) then return 'max_attempts' end
  if max_duration ~= '' and not nat(max_duration) then return 'max_duration' end
  if timeout ~= '' and not nat(timeout) then return 'timeout' end
  if mode ~= 'p' and mode ~= 'i' and mode ~= 'd' then return 'mode' end
  if mode == 'd' and not nat(window) then return 'debounce window' end
  if max_wait ~= '' and not nat(max_wait) then return 'debounce max_wait' end
  if queue ~= '' and not valid_queue(queue) then return 'queue' end
  if priority ~= '' and not nat(priority, 9) then return 'priority' end
  return nil
end

for i = 0, n - 1 do
  local b = 3 + i * 16
  local id, name, payload = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
  local due_kind, due_value, max_attempts = ARGV[b + 4], ARGV[b + 5], ARGV[b + 6]
  local max_duration, timeout, retry, mode = ARGV[b + 7], ARGV[b + 8], ARGV[b + 9], ARGV[b + 10]
  local dkey, window, max_wait, nonce = ARGV[b + 11], ARGV[b + 12], ARGV[b + 13], ARGV[b + 14]
  local queue, priority = ARGV[b + 15], ARGV[b + 16]
  local result
  local bad = bad_args(due_kind, due_value, max_attempts, max_duration, timeout, mode, window, max_wait, queue,
    priority)
  if bad then result = {'invalid', id, bad .. ' is not a whole number'} end
  if not result and mode == 'd' then
    local bound = redis.call('HGET', KEYS[5], dkey)
    if bound then
      local bkey = task_key(bound)
      local head = fields(bkey, unpack(DEBOUNCED))
      if not head then
        set_aside(bound, nil, not_a_hash(bkey), false, nil, now)
      elseif head[1] == 'CREATED' or head[1] == 'PENDING' then
        local reason = check(record(bkey))
        if nonce ~= '' and head[3] == nonce then
          result = {'created', bound}
        elseif reason then
          set_aside(bound, nil, reason, true, head[1], now)
        else
          local due = now + nat(window)
          if max_wait ~= '' then due = math.min(due, nat(head[2]) + nat(max_wait)) end
          redis.call('HSET', bkey, 'p', payload, 'd', int(due))
          local key, bq, bp = waiting_key(head[4], head[5])
          waiting.add(key, bq, bp, int(due), bound)
          result = {'debounced', bound}
        end
      end
    end
  end
  if not result then
    local tkey = task_key(id)
    -- EXISTS first: an integer costs less than TYPE's status reply, and a
    -- new id is the common case.
    local t = 'none'
    if made[tkey] then
      t = 'hash'
    elseif not fresh and redis.call('EXISTS', tkey) == 1 then
      t = redis.call('TYPE', tkey).ok
    end
    if t == 'hash' then
      if nonce ~= '' and redis.call('HGET', tkey, 'h') == nonce then
        result = {'created', id}
      elseif mode == 'i' then
        result = {'existing', id}
      else
        result = {'duplicate', id}
      end
    elseif t ~= 'none' then
      result = {'corrupt', id, not_a_hash(tkey)}
    else
      local due = now
      if mode == 'd' then
        due = now + nat(window)
        if max_wait ~= '' then due = math.min(due, now + nat(max_wait)) end
      elseif due_kind == 'a' then
        due = now + nat(due_value)
      elseif due_kind == 't' then
        due = nat(due_value)
      end
      local due_s = (due == now) and now_s or int(due)
      local deadline = max_duration ~= '' and now + nat(max_duration) or nil
      local lkey, q, p = write_task(tkey, name, payload, max_attempts, now_s, due_s, deadline, timeout, retry,
        mode == 'd' and dkey or nil, nonce, queue, priority)
      if mode == 'd' then redis.call('HSET', KEYS[5], dkey, id) end
      made[tkey] = true
      waiting.add(lkey, q, p, due_s, id)
      result = 1
    end
  end
  out[#out + 1] = result
end
waiting.flush()
flush_counts()
wake()
return {int(now), out}
