-- claim: up to ARGV[4] due tasks for worker ARGV[3] with a lease of ARGV[5] ms.
-- ARGV[6] is the call's nonce: a resent claim (fred retries a command whose
-- connection dropped) returns the tasks the first execution claimed instead
-- of claiming more. ARGV[7], when given, says what to do with the claim
-- plan that follows: 'a' applies the quotas then fills, 'q'
-- applies the quotas only (the first pass over several partitions, so one
-- partition's fill does not take slots another's quotas would fill);
-- ARGV[8] is the number of shares, then a queue and a quota per share: up to
-- each quota from its queue in the order given, then the rest of the limit
-- from the same queues in the same order; a queue paused in this partition
-- gives nothing. Without it the claim is the default queue's alone. Within a
-- queue its levels go from priority 9 down to 0 (common/02_keys.lua), each earliest
-- due first. Returns {now, more_due (0|1), {{id, fields...}...},
-- {{id, reason}...}, {queues cut short}}: the fourth holds the records set aside as corrupt
-- (set_aside in common/06_records.lua) instead of being claimed; the rest of the batch
-- is claimed as if they were not there (a bad record never stops its neighbours).
-- Fleet-wide limits (common/05_limits.lua): a limited queue gives no more tasks than
-- its concurrency limit leaves (its running set's ZCARD) and than whole
-- tokens are in its bucket, in the quotas and the fill alike; its claimed
-- tasks join its running set and the tokens spent are written back. The
-- queues a limit cut short while they had more due tasks are returned
-- (fifth element): Rust adds one to each one's throttled total per claim,
-- however many partitions and passes the claim took. A queue whose limits do not
-- parse, or whose running set is not a ZSET, gives nothing (held) until
-- set_queue_limits or the leader's limits_tidy repairs it.
local worker, limit, lease, nonce = ARGV[3], nat(ARGV[4], 100000), nat(ARGV[5]), ARGV[6]
if not (limit and lease) then return redis.error_reply('ERR claim: limit or lease is not a whole number') end
local shares, fill = {}, true
if ARGV[7] then
  local n = nat(ARGV[8], 64)
  if not n or #ARGV ~= 8 + 2 * n or not (ARGV[7] == 'a' or ARGV[7] == 'q') then
    return redis.error_reply('ERR claim: bad claim plan')
  end
  fill = ARGV[7] == 'a'
  for i = 0, n - 1 do
    local q, quota = ARGV[9 + 2 * i], nat(ARGV[10 + 2 * i], 100000)
    if not (valid_queue(q) and quota) then return redis.error_reply('ERR claim: bad claim plan') end
    shares[#shares + 1] = {q, quota}
  end
else
  -- The plain claim: one read of each level, as before queues existed.
  shares[1] = {DEFAULT_QUEUE, limit}
  fill = false
end
check_keys()
local now = now_ms()
local last_key = ARGV[1] .. 'lc:' .. worker
local out, aside = {}, {}

local previous = redis.pcall('GET', last_key)
if type(previous) == 'string' and string.sub(previous, 1, #nonce + 1) == nonce .. '\n' then
  for id in string.gmatch(string.sub(previous, #nonce + 2), '[^\n]+') do
    local rec = record(task_key(id))
    if rec and rec[1] == 'RUNNING' and rec[15] == worker then
      table.insert(rec, 1, id)
      out[#out + 1] = rec
    end
  end
  return {int(now), 1, out, aside, {}}
end

local until_ms = int(now + lease)
local now_s = int(now)
local leased, claimed = {}, {}
local more = 0
-- Levels found without a due task left (not read again by this call), and
-- levels seen to hold one more due task than taken.
local drained, leftover = {}, {}

-- Claims up to `want` due tasks of one level; returns how many it claimed
-- and whether the level has no due task left.
local runs = {}
local function take_level(key, q, p, want)
  -- One more than asked tells whether due work is left behind. A level key
  -- of another type (edited by hand) answers an error table: skipped.
  local ids = redis.pcall('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', 0, want + 1)
  if type(ids) ~= 'table' or ids.err or #ids == 0 then return 0, true end
  local empty = #ids <= want
  if not empty then ids[#ids] = nil end
  -- From here on nothing can fail: every record is inspected (read with
  -- pcall, fields checked) before anything is written for it.
  -- They are the level's first #ids by rank (read from -inf within this
  -- call): one walk removes them, without a lookup per member.
  redis.call('ZREMRANGEBYRANK', key, 0, #ids - 1)
  touch(q, p)
  local got = 0
  for _, id in ipairs(ids) do
    local tkey = task_key(id)
    local verdict, rec = inspect(id, 1, now, key, true)
    if verdict == 'ok' then
      local st = rec[1]
      local cancel_flag = rec[17]
      rec[1] = 'RUNNING'
      -- Both checked by inspect (CLAIM_NUMBERS): whole numbers below their limit.
      rec[4] = int((tonumber(rec[4]) or 0) + 1)
      rec[6] = int((tonumber(rec[6]) or 0) + 1)
      rec[9] = now_s
      rec[15] = worker
      rec[16] = until_ms
      rec[17] = false
      redis.call('HSET', tkey, 's', 'RUNNING', 'a', rec[4], 'f', rec[6], 'b', rec[9], 'w', worker, 'l', until_ms)
      if rec[18] and redis.call('HGET', KEYS[5], rec[18]) == id then redis.call('HDEL', KEYS[5], rec[18]) end
      if cancel_flag then redis.call('HDEL', tkey, 'q') end
      leased[#leased + 1] = until_ms
      leased[#leased + 1] = id
      claimed[#claimed + 1] = id
      local run = runs[q]
      if run then
        run[#run + 1] = now_s
        run[#run + 1] = tkey
      end
      move(st, 'RUNNING')
      table.insert(rec, 1, id)
      out[#out + 1] = rec
      got = got + 1
    elseif verdict == 'aside' then
      aside[#aside + 1] = {id, rec}
    end
    -- 'ghost' and 'stale': an index entry without its task, already removed.
  end
  return got, empty
end

-- Claims up to `want` due tasks of queue `q`, highest priority first;
-- returns how many, and whether every level of `q` is drained. A level is
-- read once per take: entries set aside count against `want`, as they
-- always have, so a take reads at most `want + 1` entries of a level.
local function take(q, want)
  local got, all_drained = 0, true
  for _, lv in ipairs(queue_levels(q)) do
    local key, p = lv[1], lv[2]
    if got < want and not drained[key] then
      local n, empty = take_level(key, q, p, want - got)
      got = got + n
      if empty then drained[key] = true end
      leftover[key] = not empty
    end
    if not drained[key] then all_drained = false end
  end
  return got, all_drained
end

-- Whether queue `q` has a due task in a level this call has not drained.
local function has_due(q)
  for _, lv in ipairs(queue_levels(q)) do
    if leftover[lv[1]] then return true end
    if not drained[lv[1]] then
      local first = redis.pcall('ZRANGEBYSCORE', lv[1], '-inf', now, 'LIMIT', 0, 1)
      if type(first) == 'table' and not first.err and #first > 0 then return true end
    end
  end
  return false
end

-- The limit state of each limited queue this call looks at: false for an
-- unlimited queue, else {lim, held, running, micro (rate only)}.
local limit_state = {}
local function state_of(q)
  local st = limit_state[q]
  if st ~= nil then return st end
  local lim = limits_of(q)
  if lim == nil then
    limit_state[q] = false
    return false
  end
  st = {lim = lim, held = lim == false, running = 0}
  if not st.held and lim.c then
    local n = redis.pcall('ZCARD', run_key(q))
    if type(n) == 'number' then
      st.running = n
    else
      redis.log(redis.LOG_WARNING, 'executor-redis: ' .. run_key(q) .. ' is not a zset: queue held')
      st.held = true
    end
  end
  if not st.held and lim.starts then
    local ok
    st.micro, ok, st.at = bucket_of(q, lim, now)
    if not ok then
      redis.log(redis.LOG_WARNING, 'executor-redis: the bucket of queue ' .. q .. ' was unreadable: emptied')
    end
  end
  if not st.held then runs[q] = {} end
  limit_state[q] = st
  return st
end

-- How many tasks the limits of `q` let this call take now.
local function allowance(st)
  if st.held then return 0 end
  local n = math.huge
  if st.lim.c then n = math.max(st.lim.c - st.running, 0) end
  if st.lim.starts then n = math.min(n, math.floor(st.micro / MICRO)) end
  return n
end

local throttled = {}
-- `take` within the limits of `q`; returns as `take` does.
local function take_limited(q, want)
  local st = state_of(q)
  if not st then return take(q, want) end
  local capped = math.min(want, allowance(st))
  local got, empty = 0, false
  if capped > 0 then got, empty = take(q, capped) end
  if not st.held then
    st.running = st.running + got
    if st.lim.starts then st.micro = math.max(st.micro - got * MICRO, 0) end
  end
  if capped < want and got == capped and not empty and has_due(q) then
    throttled[q] = true
    -- At its limit for the rest of this call: neither the fill nor the
    -- check for left-over work looks at it again.
    empty = true
  end
  return got, empty
end

local left = limit
local open = {}
for _, share in ipairs(shares) do
  local q = share[1]
  if open[q] == nil then open[q] = redis.pcall('SISMEMBER', paused_key(), q) ~= 1 end
end
-- Quotas first, in order; then the fill, in the same order.
for _, share in ipairs(shares) do
  local q, want = share[1], math.min(share[2], left)
  if want > 0 and open[q] then
    local got, empty = take_limited(q, want)
    left = left - got
    if empty then open[q] = false end
  end
end
for _, share in ipairs(fill and shares or {}) do
  if left <= 0 then break end
  local q = share[1]
  if open[q] then
    local got, empty = take_limited(q, left)
    if empty then open[q] = false end
    left = left - got
  end
end
-- The batch is full: does a level it did not empty still have due work?
-- A level seen to hold more answers without a read, so the plain claim of
-- a backlog costs no extra call.
if left <= 0 then
  for q, is_open in pairs(open) do
    if is_open and more == 0 and has_due(q) then more = 1 end
  end
end
if more == 1 then wake() end
if #leased > 0 then
  add_leases(leased)
  redis.call('SET', last_key, nonce .. '\n' .. table.concat(claimed, '\n'), 'PX', int(math.max(lease, 1)))
end
-- The limits' state, with pcall: a key edited by hand to another type
-- loses this write only (the leader's limits_tidy deletes it).
for q, st in pairs(limit_state) do
  if st and not st.held then
    if #runs[q] > 0 then
      for i = 1, #runs[q], 1000 do
        redis.pcall('ZADD', run_key(q), unpack(runs[q], i, math.min(i + 999, #runs[q])))
      end
    end
    if st.lim.starts then redis.pcall('HSET', bucket_key(), q, int(st.micro) .. ':' .. int(st.at)) end
  end
end
local cut = {}
for q in pairs(throttled) do cut[#cut + 1] = q end
flush_counts()
return {int(now), more, out, aside, cut}
