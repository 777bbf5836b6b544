-- Limits: fleet-wide concurrency and rate limits of queues, read by claims
-- and peeks and written by the scripts that start or end a task's run.
-- Uses 01_values and 02_keys.

-- Fleet-wide queue limits. They live in partition 0's slot, so
-- every partition's scripts see one state: KEYS[8] is `<base0>limits`
-- (HASH queue -> 'concurrency,starts,per_ms,burst', empty fields for no
-- limit; on a cluster with several partitions, where no limits can be set,
-- the partition's own key, which stays absent). Beside it:
-- `<base0>run:<queue>` (ZSET of the task keys of the queue's RUNNING tasks,
-- kept for limited queues only), `<base0>bucket` (HASH queue ->
-- 'micro-tokens:ms' of the rate bucket) and `<base0>throttled` (HASH queue
-- -> claims a limit cut short). With no limits anywhere KEYS[8] does not
-- exist and a script pays one EXISTS for all of this.
local LIMITS_BASE -- per call: begin() in 07_begin
local MICRO = 1000000

local limits_exist -- per call: begin() in 07_begin
local function limits_on()
  if limits_exist == nil then
    limits_exist = KEYS[8] ~= nil and redis.pcall('EXISTS', KEYS[8]) == 1
  end
  return limits_exist
end

local function run_key(q)
  return LIMITS_BASE .. 'run:' .. q
end

local function bucket_key()
  return LIMITS_BASE .. 'bucket'
end

local function throttled_key()
  return LIMITS_BASE .. 'throttled'
end

-- A limits field as a table {c = n|nil, starts, per, burst}; nil when it
-- does not parse (edited by hand).
local function parse_limits(raw)
  if type(raw) ~= 'string' then return nil end
  local c, starts, per, burst = string.match(raw, '^(%d*),(%d*),(%d*),(%d*)$')
  if not c then return nil end
  local out = {}
  if c ~= '' then
    out.c = nat(c, 1000000)
    if not out.c or out.c < 1 then return nil end
  end
  if starts ~= '' then
    out.starts, out.per, out.burst = nat(starts, 1000000), nat(per, 86400000), nat(burst, 1000000)
    if not (out.starts and out.per and out.burst) or out.starts < 1 or out.per < 1 or out.burst < 1 then
      return nil
    end
  elseif per ~= '' or burst ~= '' then
    return nil
  end
  if not out.c and not out.starts then return nil end
  return out
end

-- The limits of queue `q`: nil for none, false when its field does not
-- parse (the queue is then held: no claim takes its tasks until
-- set_queue_limits writes the field again). A limits key that is not a
-- hash names no queue: every queue reads as unlimited.
local function limits_of(q)
  if not limits_on() then return nil end
  local raw = redis.pcall('HGET', KEYS[8], q)
  if type(raw) ~= 'string' then return nil end
  local lim = parse_limits(raw)
  if not lim then
    redis.log(redis.LOG_WARNING, 'executor-redis: ' .. KEYS[8] .. ' ' .. q .. ' is not a queue limit (`' ..
      shown(raw) .. '`): the queue is held until set_queue_limits writes it again')
    return false
  end
  return lim
end

-- The bucket of a rate-limited queue as of `now`: micro-tokens refilled at
-- the rate up to the burst, whether it was readable, and the time to write
-- back (never earlier than the one stored: a clock that steps back earns
-- nothing twice). A missing or unreadable bucket (edited by hand) reads as
-- empty as of now: the queue waits for tokens rather than bursting.
local function bucket_of(q, lim, now)
  local raw = redis.pcall('HGET', bucket_key(), q)
  local micro, at
  if type(raw) == 'string' then
    local m, a = string.match(raw, '^(%d+):(%d+)$')
    micro, at = nat(m), nat(a)
  end
  if not (micro and at) then return 0, false, now end
  local cap = lim.burst * MICRO
  if now > at then micro = micro + (now - at) * lim.starts * MICRO / lim.per end
  return math.floor(math.min(micro, cap)), true, math.max(at, now)
end

-- The RUNNING tasks of each queue in `wanted` (a set; nil: every queue)
-- found in the lease ZSETs `leases` (this partition's and, from partition
-- 0 of a standalone server, the others'): queue -> list of task keys. A
-- lease entry whose record is not a RUNNING task hash is not counted (the
-- reaper deals with it). Costs one HMGET per running task.
local function running_by_queue(leases, wanted)
  local out = {}
  for _, lkey in ipairs(leases) do
    local base = string.sub(lkey, 1, -6)
    local ids = redis.pcall('ZRANGE', lkey, 0, -1)
    if type(ids) == 'table' and not ids.err then
      for _, id in ipairs(ids) do
        local tkey = base .. 't:' .. id
        local sg = redis.pcall('HMGET', tkey, 's', 'g')
        if type(sg) == 'table' and not sg.err and sg[1] == 'RUNNING' then
          local q = sg[2] or DEFAULT_QUEUE
          if not wanted or wanted[q] then
            out[q] = out[q] or {}
            table.insert(out[q], tkey)
          end
        end
      end
    end
  end
  return out
end

-- The lease ZSETs a limits script sees: KEYS[2], then KEYS[9..].
local function all_leases()
  local out = {KEYS[2]}
  for i = 9, #KEYS do out[#out + 1] = KEYS[i] end
  return out
end

-- A key of the limits that holds another type than `want` (edited by
-- hand) is deleted: it is state the limits scripts rebuild (a running set
-- from the leases, a bucket as empty, a throttled total from zero).
local function repair(key, want)
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= want then
    redis.log(redis.LOG_WARNING, 'executor-redis: ' .. key .. ' held a ' .. t .. ', not a ' .. want ..
      ': deleted, rebuilt')
    redis.call('DEL', key)
    return true
  end
  return false
end

-- Takes a task that leaves RUNNING out of its queue's running set. When
-- the queue has a concurrency limit, its slot is free: idle claimers are
-- woken, since their wait (peek.lua) leaves a queue at its limit out.
local slot_freed -- per call: begin() in 07_begin
local function unrun(q, id)
  if limits_on() and q and valid_queue(q) and redis.pcall('ZREM', run_key(q), task_key(id)) == 1
      and not slot_freed then
    local lim = limits_of(q)
    if lim and lim.c then
      slot_freed = true
      wake()
    end
  end
end
