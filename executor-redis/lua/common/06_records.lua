-- Records and checks: writing a new task's record, reading task hashes,
-- checking a record before a script works on it, and setting aside one it
-- cannot work on. Uses 01_values, 02_keys, 03_counts and 05_limits.

-- Writes the record of a new task at `tkey` (which the caller found
-- absent) and counts it; returns the waiting level it goes to (key, queue,
-- priority). `created` and `due` are digits, `deadline` a number or nil;
-- the other values as submit.lua takes them ('' for none; `dkey` nil
-- unless debounced). Attempts and fence start at 0 and are left out until
-- a claim sets them. A task with no optional field, in the default queue
-- at priority 0 (the common case), is written without building a list.
local function write_task(tkey, name, payload, max_attempts, created, due, deadline, timeout, retry, dkey, nonce,
    queue, priority)
  move(nil, 'CREATED')
  if not deadline and timeout == '' and retry == '' and not dkey and nonce ~= '' and queue == '' and
      (priority == '' or priority == '0') then
    redis.call('HSET', tkey, 's', 'CREATED', 'n', name, 'p', payload, 'm', max_attempts, 'c', created, 'd', due,
      'h', nonce)
    return KEYS[1], DEFAULT_QUEUE, 0
  end
  local f = {'s', 'CREATED', 'n', name, 'p', payload, 'm', max_attempts, 'c', created, 'd', due}
  if deadline then f[#f + 1] = 'x'; f[#f + 1] = int(deadline) end
  if timeout ~= '' then f[#f + 1] = 'o'; f[#f + 1] = timeout end
  if retry ~= '' then f[#f + 1] = 'r'; f[#f + 1] = retry end
  if dkey then f[#f + 1] = 'k'; f[#f + 1] = dkey end
  if nonce ~= '' then f[#f + 1] = 'h'; f[#f + 1] = nonce end
  if queue ~= '' then f[#f + 1] = 'g'; f[#f + 1] = queue end
  if priority ~= '' and priority ~= '0' then f[#f + 1] = 'v'; f[#f + 1] = priority end
  redis.call('HSET', tkey, unpack(f))
  local q, p = level_of(queue ~= '' and queue, priority ~= '' and priority)
  return level_key(q, p), q, p
end

-- The FIELDS of a task hash; false when the key holds another type of value.
local function record(tkey)
  local rec = redis.pcall('HMGET', tkey, unpack(FIELDS))
  if rec.err then return false end
  return rec
end

-- What a claim reads of a waiting task: FIELDS less the four the claim
-- writes over (`b`, `w`, `l`) or that mean nothing while RUNNING (`z`,
-- returned as missing). Each field asked of a small (listpack) hash is a
-- scan of it, a missing one a whole scan: four fewer per claimed task.
local CLAIM_FIELDS = {'s', 'n', 'p', 'a', 'm', 'f', 'c', 'd', 'x', 'o', 'r', 'e', 'q', 'k', 'g', 'v'}
local function claim_record(tkey)
  local r = redis.pcall('HMGET', tkey, unpack(CLAIM_FIELDS))
  if r.err then return false end
  return {r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], false, false, r[9], r[10], r[11], r[12], false, false,
    r[13], r[14], r[15], r[16]}
end

-- HMGET of some fields; false when the key holds another type of value.
local function fields(tkey, ...)
  local rec = redis.pcall('HMGET', tkey, ...)
  if rec.err then return false end
  return rec
end

-- Why a key that is not a task hash cannot be read.
local function not_a_hash(tkey)
  return 'the key holds a ' .. redis.call('TYPE', tkey).ok .. ', not a task hash'
end

-- Numeric fields, three values each: position in FIELDS, largest value,
-- required (1) or not (0). Attempts and fence stay one below their limit so
-- a claim can add one.
local NUMBERS = {4, U32 - 1, 0, 5, U32, 1, 6, SAFE - 1, 0, 7, SAFE, 1, 8, SAFE, 1, 9, SAFE, 0,
  10, SAFE, 0, 11, SAFE, 0, 12, SAFE, 0, 16, SAFE, 0, 20, 9, 0}

-- The numbers a claim itself works with: attempts and fence (it adds one)
-- and the priority (the level it files the task under). The rest of a
-- claimed record, and its retry policy, are parsed by Rust, which
-- dead-letters a claimed record it cannot read, with the reason
-- (claim.rs): checking them here too cost a claim a sixth to a fifth of its
-- server time.
local CLAIM_NUMBERS = {4, U32 - 1, 0, 6, SAFE - 1, 0, 20, 9, 0}

-- Why a record (the FIELDS of a hash) cannot be worked on, or nil: its state
-- is missing or unknown, its name or payload is missing, a number is
-- missing, not a whole number or out of range, or its retry policy is not
-- JSON. What Lua cannot check (the retry policy's shape, the worker id) is
-- checked by Rust after a claim. A claim passes `claiming`: only the
-- numbers in CLAIM_NUMBERS, no retry policy (see there).
local function check(rec, claiming)
  local st = rec[1]
  if not st then return 'field `s` (state) is missing' end
  if not STATES[st] then return 'unknown state `' .. shown(st) .. '`' end
  if not rec[2] then return 'field `n` (name) is missing' end
  if not rec[3] then return 'field `p` (payload) is missing' end
  local numbers = claiming and CLAIM_NUMBERS or NUMBERS
  for i = 1, #numbers, 3 do
    local at, max = numbers[i], numbers[i + 1]
    local v = rec[at]
    if v then
      if not nat(v, max) then
        return 'field `' .. FIELDS[at] .. '` should be a whole number of 0..' .. int(max) ..
          ', found `' .. shown(v) .. '`'
      end
    elseif numbers[i + 2] == 1 then
      return 'field `' .. FIELDS[at] .. '` is missing'
    end
  end
  if not claiming and rec[13] and not pcall(cjson.decode, rec[13]) then
    return 'field `r` (retry policy) is not JSON'
  end
  if rec[19] and not valid_queue(rec[19]) then
    return 'field `g` (queue) should be 1 to 64 letters, digits, `-`, `_`, `.` or `:`, found `' ..
      shown(rec[19]) .. '`'
  end
  return nil
end

-- The first index (1-4) holding `id`, or nil. Index 1 is waiting in any
-- level: the record's own first, then, when its `g`/`v` do not parse (or
-- the key is not a hash), every level of the partition.
local function index_of(id)
  local gv = fields(task_key(id), 'g', 'v')
  local known = gv and level_of(gv[1], gv[2])
  if known then
    local key = waiting_key(gv[1], gv[2])
    if key ~= KEYS[1] and type(redis.pcall('ZSCORE', key, id)) == 'string' then return 1 end
  end
  for i = 1, 4 do
    if redis.call('ZSCORE', KEYS[i], id) then return i end
  end
  if not known then
    for _, lv in ipairs(all_levels()) do
      if type(redis.pcall('ZSCORE', lv[1], id)) == 'string' then return 1 end
    end
  end
  return nil
end

-- Sets aside the record of `id`, found in index `index` (nil: look it up),
-- that a script cannot work on: a hash goes to ERROR with `reason` as its
-- last error and leaves its debounce binding; a key of another type is
-- left as it is. Either way it leaves every other index for the dead-letter
-- one, where `list` reports it unreadable, retention trims it and `delete`
-- removes it, and its count moves to ERROR from the state its index counted
-- it under (`hint`: the state it probably had). Only reads before its
-- first write, and the keys it writes were checked by check_keys.
local function set_aside(id, index, reason, is_hash, hint, now)
  local tkey = task_key(id)
  index = index or index_of(id)
  if is_hash and index == 1 and INDEX_OF[hint or ''] ~= 1 then
    -- Which waiting state it was counted under: a claimed task has a fence.
    hint = ((nat(redis.call('HGET', tkey, 'f')) or 0) > 0) and 'PENDING' or 'CREATED'
  end
  local from = counted(index, hint)
  local k = is_hash and redis.call('HGET', tkey, 'k')
  for _, i in ipairs({2, 4}) do redis.call('ZREM', KEYS[i], id) end
  local gv = is_hash and redis.call('HMGET', tkey, 'g', 'v') or {false, 'x'}
  remove_waiting(id, gv[1], gv[2])
  if index == 2 and gv[2] ~= 'x' then unrun(gv[1] or DEFAULT_QUEUE, id) end
  redis.call('ZADD', KEYS[3], int(now), id)
  if is_hash then
    redis.call('HSET', tkey, 's', 'ERROR', 'z', int(now), 'e', 'corrupt task record: ' .. reason)
    if k and redis.call('HGET', KEYS[5], k) == id then redis.call('HDEL', KEYS[5], k) end
  end
  move(from, 'ERROR')
end

-- Looks at the record of an index entry before a script works on it:
-- returns 'ok', rec for a task hash in a state of that index whose fields
-- all check out; 'ghost' for an entry without a key (the hash was deleted
-- by hand: its count is taken back); 'stale' for a task in another state
-- that is also indexed there (the entry is left to the caller to drop);
-- otherwise it sets the record aside and returns 'aside', reason. `found`
-- is the waiting ZSET the entry came from (nil: KEYS[index]); a waiting
-- task must be in its own level's. A claim passes `claiming`: the record
-- is read by claim_record and checked as check() says.
local function inspect(id, index, now, found, claiming)
  local tkey = task_key(id)
  local rec
  if claiming then rec = claim_record(tkey) else rec = record(tkey) end
  if not rec then
    local reason = not_a_hash(tkey)
    set_aside(id, index, reason, false, nil, now)
    return 'aside', reason
  end
  local st = rec[1]
  if not st and redis.call('EXISTS', tkey) == 0 then
    move(counted(index, nil), nil)
    return 'ghost'
  end
  local reason = check(rec, claiming)
  if not reason and INDEX_OF[st] == 1 and index == 1 then
    local own = waiting_key(rec[19], rec[20])
    found = found or KEYS[1]
    if own ~= found then
      if type(redis.pcall('ZSCORE', own, id)) == 'string' then return 'stale' end
      reason = 'queue `' .. shown(rec[19] or DEFAULT_QUEUE) .. '` priority ' .. (rec[20] or '0') ..
        ' found in the wrong waiting index (' .. found .. ')'
    end
  elseif not reason and INDEX_OF[st] ~= index then
    local home = KEYS[INDEX_OF[st]]
    if INDEX_OF[st] == 1 then home = waiting_key(rec[19], rec[20]) end
    if type(redis.pcall('ZSCORE', home, id)) == 'string' then return 'stale' end
    reason = 'state ' .. st .. ' found in the wrong index (' .. (found or KEYS[index]) .. ')'
  end
  if reason then
    set_aside(id, index, reason, true, st, now)
    return 'aside', reason
  end
  return 'ok', rec
end

-- Dead letter or finished set for a terminal state.
local function finished_set(state)
  if state == 'COMPLETED' or state == 'CANCELLED' then return KEYS[4] end
  return KEYS[3]
end

-- The fields of task `id` (key `tkey`) an operator's action reads (cancel,
-- requeue, run now): the state first, then `...`. When there is nothing to
-- act on, nil and the reply instead: {'missing'} for no task; {'corrupt',
-- reason} for a key that is not a hash or a record without a known state,
-- which is set aside (above) first.
local function action_fields(id, tkey, ...)
  local rec = fields(tkey, 's', ...)
  local function corrupt(reason, is_hash)
    set_aside(id, nil, reason, is_hash, nil, now_ms())
    flush_counts()
    return {'corrupt', reason}
  end
  if not rec then return nil, corrupt(not_a_hash(tkey), false) end
  local st = rec[1]
  if not st then
    if redis.call('EXISTS', tkey) == 0 then return nil, {'missing'} end
    return nil, corrupt('field `s` (state) is missing', true)
  end
  if not STATES[st] then return nil, corrupt('unknown state `' .. shown(st) .. '`', true) end
  return rec
end
