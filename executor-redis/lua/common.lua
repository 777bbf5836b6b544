-- The top of the function library that holds every script, or prepended to
-- each script where the server runs no functions (see src/scripts.rs).
-- Conventions:
--   KEYS: 1 due ZSET, 2 lease ZSET, 3 dead-letter ZSET, 4 finished ZSET,
--         5 debounce HASH, 6 wake ZSET, 7 counts HASH (all one hash tag).
--   ARGV[1]: the key base of the partition (`{re:<ns>}:`), ARGV[2]: '1' to
--   set the wake marker here.
-- Task keys (`<base>t:<id>`) are built from ARGV[1] because claim and reap
-- only learn ids from a ZSET; they share the hash tag of KEYS, so every
-- script touches one slot.
--
-- Redis does not roll back a script that fails half way: what it wrote
-- before the error stays. So a script checks everything it can fail on
-- before it writes (invariant 7): the partition's own keys are of their type
-- (check_keys), task hashes are read with redis.pcall (a key of another type
-- answers an error table instead of aborting the script), numbers are
-- checked with nat() before any arithmetic, and a record a script cannot
-- work on is set aside (set_aside) without touching its neighbours.

-- The task hash fields, in the order scripts return them to Rust (record.rs).
-- Two more fields are never returned: `u`, the nonce of the last change by
-- finish, cancel or requeue, and `h`, the nonce of the submit that created
-- the task (kept apart, so a resent submit is recognised whatever happened
-- to the task since).
-- `g` (queue) and `v` (priority) are left out for the default queue and
-- priority 0, so records written before queues existed read as those.
-- `y`, the attempt log, is not returned either: only `get` and `due_before`
-- read it (see append_attempt below), so claims stay as lean as before.
local FIELDS = {'s', 'n', 'p', 'a', 'm', 'f', 'c', 'd', 'b', 'z', 'x', 'o', 'r', 'e', 'w', 'l', 'q', 'k', 'g', 'v'}

local STATES = {CREATED = true, PENDING = true, RUNNING = true, COMPLETED = true,
  FAILED = true, TIMEOUT = true, ERROR = true, CANCELLED = true}

-- The index (KEYS position) each state lives in, and the states of each
-- index. Every counted task has exactly one index entry, so the count of a
-- record whose own state cannot be trusted is taken from its index.
local INDEX_OF = {CREATED = 1, PENDING = 1, RUNNING = 2, FAILED = 3, TIMEOUT = 3, ERROR = 3,
  COMPLETED = 4, CANCELLED = 4}

-- Largest whole number a Lua double holds exactly (2^53 - 1); times, fences
-- and durations stay far below it (the year 9999 is 2.5e14 ms).
local SAFE = 9007199254740991
local U32 = 4294967295

-- A whole number of 0..max (default SAFE) written as plain digits, as Rust
-- writes and parses them; nil for anything else (nil, false, '', '-1',
-- '1e3', ' 5', 'nan', a number past max).
local function nat(v, max)
  if type(v) ~= 'string' or #v == 0 or #v > 16 or string.find(v, '[^0-9]') then return nil end
  local n = tonumber(v)
  if n > (max or SAFE) then return nil end
  return n
end

-- A stored value as it may be shown in a reason: at most 40 bytes, and
-- printable ASCII only, so the reason itself is always readable text.
local function shown(v)
  return (string.gsub(string.sub(v, 1, 40), '[^%w%p ]', '?'))
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Integers as plain digits: Lua would print large numbers as 1.7e+12.
local function int(n)
  return string.format('%d', n)
end

-- The attempt log (field `y`, TaskRecord::attempt_log in Rust): a JSON
-- array of the attempts that ended before the task's current one, oldest
-- first, at most MAX_LOG, each {"attempt", "worker", "started_at",
-- "ended_at", "outcome", "error"}. Only a retry (finish.lua), a reap back to
-- waiting (reap.lua) and a requeue (requeue.lua) append to it, so a
-- completion pays nothing for it. Entries are written by hand: cjson would
-- print a number past 14 digits rounded. A log that does not decode (edited
-- by hand) is replaced by one holding the new entry, and an entry of the
-- wrong shape is dropped: the log never stops a transition.
local MAX_LOG = 20
local MAX_LOG_ERROR = 8192

-- `s` cut to MAX_LOG_ERROR bytes at a UTF-8 character boundary (the
-- runtime's executor_core::MAX_ERROR_LEN).
local function log_error(s)
  if type(s) ~= 'string' or #s <= MAX_LOG_ERROR then return s end
  local i = MAX_LOG_ERROR
  while i > 0 do
    local b = string.byte(s, i + 1)
    if b < 128 or b >= 192 then break end
    i = i - 1
  end
  return string.sub(s, 1, i)
end

local function log_text(v)
  if type(v) == 'string' then return cjson.encode(v) end
  return 'null'
end

local function log_nat(v)
  if type(v) == 'number' and v >= 0 and v <= SAFE and v == math.floor(v) then return v end
  return nil
end

local function log_entry(e)
  return '{"attempt":' .. int(e.attempt) .. ',"worker":' .. log_text(e.worker) ..
    ',"started_at":' .. (e.started_at and int(e.started_at) or 'null') .. ',"ended_at":' .. int(e.ended_at) ..
    ',"outcome":' .. log_text(e.outcome) .. ',"error":' .. log_text(e.error) .. '}'
end

-- The log `raw` (the `y` field, or false) with `entry` appended, trimmed to
-- the newest MAX_LOG: the value to write back in the transition's own HSET.
-- `entry` is {attempt, worker, started_at, ended_at, outcome, error}.
local function append_attempt(raw, entry)
  local parts = {}
  if type(raw) == 'string' then
    local ok, old = pcall(cjson.decode, raw)
    if ok and type(old) == 'table' then
      for _, e in ipairs(old) do
        if type(e) == 'table' and log_nat(e.attempt) and log_nat(e.ended_at) and type(e.outcome) == 'string' then
          parts[#parts + 1] = log_entry({attempt = e.attempt, worker = e.worker, started_at = log_nat(e.started_at),
            ended_at = e.ended_at, outcome = e.outcome, error = e.error})
        end
      end
    end
  end
  parts[#parts + 1] = log_entry(entry)
  return '[' .. table.concat(parts, ',', math.max(1, #parts - MAX_LOG + 1)) .. ']'
end

-- Refuses the call, before any write, when one of the partition's indexes
-- (KEYS 1-4) or its debounce hash (KEYS 5) holds another type of value (a
-- hand-made key): a write to it would fail half way. With no argument all
-- five are checked, else the positions given (the keys the script may
-- write). The wake marker and the counts hash are only written with pcall,
-- so a broken one never stops work.
local function check_keys(...)
  local which = {...}
  if #which == 0 then which = {1, 2, 3, 4, 5} end
  for _, i in ipairs(which) do
    local want = (i == 5) and 'hash' or 'zset'
    local t = redis.call('TYPE', KEYS[i]).ok
    if t ~= 'none' and t ~= want then
      error({err = 'WRONGTYPE ' .. KEYS[i] .. ' holds a ' .. t .. ', not a ' .. want ..
        ' (edited by hand?): nothing was changed; delete or repair that key'})
    end
  end
end

-- Named queues and priorities (issue 16). A waiting task is indexed in the
-- ZSET of its level (queue, priority): the default queue at priority 0 is
-- KEYS[1], the due ZSET of before queues existed, so the plain path costs
-- what it did; any other level is `<base>qd:<priority>:<queue>`. The
-- registry `<base>queues` (HASH queue -> the digits of its priorities that
-- have a ZSET, highest first; the default queue's 0 is never listed) names
-- the levels holding tasks, so claims, peeks and stats visit only those; a
-- level leaves it when its ZSET empties. `<base>paused` (SET) holds the
-- queues paused in this partition. All share the partition's hash tag.
local DEFAULT_QUEUE = 'default'

local function valid_queue(q)
  return type(q) == 'string' and #q >= 1 and #q <= 64 and not string.find(q, '[^%w%-_%.:]')
end

local function registry_key()
  return ARGV[1] .. 'queues'
end

local function paused_key()
  return ARGV[1] .. 'paused'
end

-- The waiting ZSET of queue `q` at priority `p` (a number).
local function level_key(q, p)
  if p == 0 and q == DEFAULT_QUEUE then return KEYS[1] end
  return ARGV[1] .. 'qd:' .. p .. ':' .. q
end

-- The queue and priority of a record's `g` and `v` fields (missing: the
-- default queue, priority 0); nil when either does not parse.
local function level_of(g, v)
  local q = DEFAULT_QUEUE
  if g then
    if not valid_queue(g) then return nil end
    q = g
  end
  local p = 0
  if v then
    p = nat(v, 9)
    if not p then return nil end
  end
  return q, p
end

-- The priorities of `q` that have a ZSET, highest first: {} when none, or
-- when the registry is not a hash (edited by hand: only KEYS[1] is seen).
local levels_cache -- per call: begin() below
local function levels_in_use(q)
  local cached = levels_cache[q]
  if cached then return cached end
  local out = {}
  local digits = redis.pcall('HGET', registry_key(), q)
  if type(digits) == 'string' then
    for i = 1, #digits do
      local p = tonumber(string.sub(digits, i, i))
      if p then out[#out + 1] = p end
    end
  end
  levels_cache[q] = out
  return out
end

local function write_levels(q, set)
  local s = ''
  for p = 9, 0, -1 do
    if set[p] then s = s .. p end
  end
  levels_cache[q] = nil
  if s == '' then redis.pcall('HDEL', registry_key(), q) else redis.pcall('HSET', registry_key(), q, s) end
end

-- Every registered level of the partition: {{key, queue, priority}...}.
local function all_levels()
  local out = {}
  local reg = redis.pcall('HGETALL', registry_key())
  if type(reg) ~= 'table' or reg.err then return out end
  for i = 1, #reg, 2 do
    local q = reg[i]
    for j = 1, #reg[i + 1] do
      local p = tonumber(string.sub(reg[i + 1], j, j))
      if p and valid_queue(q) then out[#out + 1] = {level_key(q, p), q, p} end
    end
  end
  return out
end

-- The levels a claim of `q` visits, highest priority first: {{key, p}...}.
local function queue_levels(q)
  local out = {}
  for _, p in ipairs(levels_in_use(q)) do
    if not (p == 0 and q == DEFAULT_QUEUE) then out[#out + 1] = {level_key(q, p), p} end
  end
  if q == DEFAULT_QUEUE then out[#out + 1] = {KEYS[1], 0} end
  return out
end

local function register(q, p)
  if p == 0 and q == DEFAULT_QUEUE then return end
  local set = {}
  for _, x in ipairs(levels_in_use(q)) do
    if x == p then return end
    set[x] = true
  end
  set[p] = true
  write_levels(q, set)
end

-- Levels entries left this call: checked once, at flush_counts, and
-- dropped from the registry when their ZSET is empty.
local touched -- per call: begin() below
local function touch(q, p)
  if not (p == 0 and q == DEFAULT_QUEUE) then touched[p .. ':' .. q] = {q, p} end
end

local function tidy_levels()
  for _, lv in pairs(touched) do
    local q, p = lv[1], lv[2]
    local n = redis.pcall('ZCARD', level_key(q, p))
    if n == 0 then
      local set, found = {}, false
      for _, x in ipairs(levels_in_use(q)) do
        if x == p then found = true else set[x] = true end
      end
      if found then write_levels(q, set) end
    end
  end
  touched = {}
end

-- The waiting ZSET of a record with fields `g`, `v`, with its queue and
-- priority; KEYS[1] and nil when they do not parse: a claim of the default
-- queue then finds it and sets it aside, with the reason (never lost).
local function waiting_key(g, v)
  local q, p = level_of(g, v)
  if not q then return KEYS[1], nil, nil end
  return level_key(q, p), q, p
end

-- ZADD/ZREM of many members in slices: Lua's unpack() fails past ~8,000
-- values, which would abort a script after its earlier writes.
local function zadd_all(key, pairs_)
  for i = 1, #pairs_, 1000 do
    redis.call('ZADD', key, unpack(pairs_, i, math.min(i + 999, #pairs_)))
  end
end
local function zrem_all(key, members)
  for i = 1, #members, 1000 do
    redis.call('ZREM', key, unpack(members, i, math.min(i + 999, #members)))
  end
end

-- Adds (score, id) pairs to the waiting ZSET `key` of level (q, p) and
-- registers the level. A level key holding another type of value (edited
-- by hand) takes nothing: the entries go to KEYS[1], where a claim of the
-- default queue finds them in the wrong level and sets them aside.
local function add_waiting(key, q, p, pairs_)
  if #pairs_ == 0 then return end
  if key ~= KEYS[1] then
    local t = redis.call('TYPE', key).ok
    if t == 'none' or t == 'zset' then
      zadd_all(key, pairs_)
      register(q, p)
      return
    end
    redis.log(redis.LOG_WARNING, 'executor-redis: ' .. key .. ' holds a ' .. t .. ', not a zset')
  end
  zadd_all(KEYS[1], pairs_)
end

-- Takes `id` out of waiting: out of its own level (fields `g`, `v`) and
-- KEYS[1], or out of every level when they do not parse (`g` false and
-- `v` 'x' for a key that is not a hash).
local function remove_waiting(id, g, v)
  redis.call('ZREM', KEYS[1], id)
  local q, p = level_of(g, v)
  if q then
    if p ~= 0 or q ~= DEFAULT_QUEUE then
      redis.pcall('ZREM', level_key(q, p), id)
      touch(q, p)
    end
    return
  end
  for _, lv in ipairs(all_levels()) do
    redis.pcall('ZREM', lv[1], id)
    touch(lv[2], lv[3])
  end
end

-- Count changes are gathered per call and written once per state. A count
-- that reaches zero is deleted, so a namespace whose tasks are all gone
-- leaves no counts hash behind (Redis drops an empty hash).
local deltas -- per call: begin() below
local function move(from, to)
  if from then deltas[from] = (deltas[from] or 0) - 1 end
  if to then deltas[to] = (deltas[to] or 0) + 1 end
end

-- The count of `state` including this call's changes so far.
local function count_of(state)
  local n = tonumber(redis.pcall('HGET', KEYS[7], state)) or 0
  return n + (deltas[state] or 0)
end

-- The state a record found in index `index` was counted under when its own
-- state field cannot be trusted: `hint` when it is a state of that index
-- with a count, else the first state of the index with a count, else nil
-- (nothing to take back). Exact whenever the hint is right or only one
-- state of the index has tasks.
local function counted(index, hint)
  if not index then return nil end
  if hint and INDEX_OF[hint] == index and count_of(hint) > 0 then return hint end
  local states = ({{'CREATED', 'PENDING'}, {'RUNNING'}, {'ERROR', 'FAILED', 'TIMEOUT'},
    {'COMPLETED', 'CANCELLED'}})[index]
  for _, s in ipairs(states) do
    if count_of(s) > 0 then return s end
  end
  return nil
end

-- Writes with pcall: a count field that is not a number (edited by hand) is
-- replaced rather than failing the call after its other writes.
local function flush_counts()
  for state, d in pairs(deltas) do
    if d ~= 0 then
      local n = redis.pcall('HINCRBY', KEYS[7], state, d)
      if type(n) == 'table' then
        redis.log(redis.LOG_WARNING, 'executor-redis: ' .. KEYS[7] .. ' ' .. state .. ': ' .. tostring(n.err))
        if d > 0 then redis.pcall('HSET', KEYS[7], state, d) else redis.pcall('HDEL', KEYS[7], state) end
      elseif n <= 0 then
        -- Zero (or below, after a hand edit): no tasks in the state.
        redis.pcall('HDEL', KEYS[7], state)
      end
    end
  end
  deltas = {}
  tidy_levels()
end

-- Adds (score, id) pairs to the lease index (KEYS[2]), keeping it a
-- skiplist. Holding only the running tasks it stays small, and Redis keeps
-- a small sorted set as a listpack, where adding a member scans the whole
-- set: 3 to 4 µs a member at 100 leases against 0.5 to 1 µs in a skiplist.
-- A member longer than `zset-max-listpack-value` (64 bytes unless
-- configured) converts it; added before the leases and removed after them,
-- in the same call, no reader ever sees it, and Redis does not convert a
-- sorted set back while it has members (the key goes with its last lease,
-- and the next claim converts the new one). Made at the first call: the
-- top of a function library may not read globals such as `string`.
local skiplist_seed
local function add_leases(pairs_)
  local seed = redis.pcall('OBJECT', 'ENCODING', KEYS[2]) ~= 'skiplist'
  if seed then
    skiplist_seed = skiplist_seed or string.rep('~', 256)
    redis.call('ZADD', KEYS[2], 0, skiplist_seed)
  end
  zadd_all(KEYS[2], pairs_)
  if seed then redis.call('ZREM', KEYS[2], skiplist_seed) end
end

local function wake()
  if ARGV[2] == '1' then redis.pcall('ZADD', KEYS[6], 0, 'w') end
end

local function task_key(id)
  return ARGV[1] .. 't:' .. id
end

-- Collects the (due, id) pairs of new waiting tasks per level, so a call
-- writes each level with one ZADD at its end (a later entry for the same
-- id wins, as it would have one by one): add(key, q, p, due, id), flush().
local function waiting_batch()
  local queued, levels = {}, {}
  local batch = {}
  function batch.add(key, q, p, due, id)
    local list = queued[key]
    if not list then
      list = {}
      queued[key] = list
      levels[#levels + 1] = {key, q, p}
    end
    list[#list + 1] = due
    list[#list + 1] = id
  end
  function batch.flush()
    for _, lv in ipairs(levels) do add_waiting(lv[1], lv[2], lv[3], queued[lv[1]]) end
    queued, levels = {}, {}
  end
  return batch
end

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

-- The inbox `<base>inbox` (LIST): a lone plain submit of a task whose id
-- was generated for it (NewTask::has_fresh_id in Rust: no other submit can
-- carry that id, so nothing needs looking up first) is queued there by one
-- RPUSH instead of a script call, and its record created here, by the next
-- claim or peek-then-claim of the partition, or by ingest.lua ahead of
-- every read of tasks. An entry is twelve values, each ended by a newline,
-- then the payload: id, name, due kind (n|a|t), due value, max_attempts,
-- max_duration, timeout, retry, nonce, queue, priority (as submit.lua
-- takes them) and the submitter's clock in ms. A task is created as
-- submit.lua creates it, its creation time the submitter's clock or the
-- server's, whichever is earlier (a clock running ahead never delays a
-- task). A resent RPUSH (same id and nonce) is created once. An entry that
-- does not parse, or whose id is taken, is moved to `<base>inbox:aside`
-- (LIST, the entry behind a line saying why) with a warning in the server
-- log, never lost and never in the way of the entries behind it. A later
-- entry format takes another key, so a worker never meets one it cannot
-- read.
local INBOX_SLICE, INBOX_MAX = 50, 500
local INBOX_ENTRY = '^([^\n]+)\n([^\n]*)\n([nat])\n(%d*)\n(%d+)\n(%d*)\n(%d*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n(%d?)\n(%d+)\n'

-- Why an inbox entry's values are unusable, or nil.
local function inbox_bad(due_kind, due_value, max_attempts, max_duration, timeout, queue, priority, at)
  if not nat(at) then return 'the submit time is not a whole number' end
  if not (due_kind == 'n' or nat(due_value)) then return 'due is not a whole number' end
  if not nat(max_attempts, U32) then return 'max_attempts is not a whole number' end
  if max_duration ~= '' and not nat(max_duration) then return 'max_duration is not a whole number' end
  if timeout ~= '' and not nat(timeout) then return 'timeout is not a whole number' end
  if queue ~= '' and not valid_queue(queue) then return 'queue is not a queue name' end
  return nil
end

local function inbox_aside(entry, reason)
  redis.log(redis.LOG_WARNING, 'executor-redis: ' .. ARGV[1] .. 'inbox: ' .. reason .. ': entry moved to ' ..
    ARGV[1] .. 'inbox:aside')
  redis.pcall('RPUSH', ARGV[1] .. 'inbox:aside', reason .. '\n' .. entry)
end

-- Creates the tasks of up to INBOX_MAX inbox entries, oldest first, and
-- answers how many entries it left behind and how many tasks it created;
-- the caller flushes the counts. An inbox of another type (edited by hand)
-- is left alone: submits to it fail with WRONGTYPE.
local function ingest(now)
  local key = ARGV[1] .. 'inbox'
  local left = redis.pcall('LLEN', key)
  if type(left) ~= 'number' or left == 0 then return 0, 0 end
  local waiting, created_n = waiting_batch(), 0
  for _ = 1, INBOX_MAX / INBOX_SLICE do
    local entries = redis.call('LRANGE', key, 0, INBOX_SLICE - 1)
    for _, entry in ipairs(entries) do
      local s, e, id, name, due_kind, due_value, max_attempts, max_duration, timeout, retry, nonce, queue,
        priority, at = string.find(entry, INBOX_ENTRY)
      local bad = not s and 'the entry does not parse' or
        inbox_bad(due_kind, due_value, max_attempts, max_duration, timeout, queue, priority, at)
      local tkey = not bad and task_key(id)
      if bad then
        inbox_aside(entry, bad)
      elseif redis.call('EXISTS', tkey) == 1 then
        -- Created by this entry's first copy (a resent RPUSH), or an id
        -- someone else took (written by hand): set aside.
        if not (redis.call('TYPE', tkey).ok == 'hash' and nonce ~= '' and
            redis.call('HGET', tkey, 'h') == nonce) then
          inbox_aside(entry, 'task ' .. shown(id) .. ' already exists')
        end
      else
        local created = math.min(nat(at), now)
        local due = created
        if due_kind == 'a' then due = created + nat(due_value) elseif due_kind == 't' then due = nat(due_value) end
        local deadline = max_duration ~= '' and created + nat(max_duration) or nil
        local lkey, q, p = write_task(tkey, name, string.sub(entry, e + 1), max_attempts, int(created), int(due),
          deadline, timeout, retry, nil, nonce, queue, priority)
        waiting.add(lkey, q, p, int(due), id)
        created_n = created_n + 1
      end
    end
    redis.call('LTRIM', key, #entries, -1)
    left = left - #entries
    if #entries < INBOX_SLICE or left <= 0 then break end
  end
  waiting.flush()
  return math.max(left, 0), created_n
end

-- Fleet-wide queue limits (issue 16). They live in partition 0's slot, so
-- every partition's scripts see one state: KEYS[8] is `<base0>limits`
-- (HASH queue -> 'concurrency,starts,per_ms,burst', empty fields for no
-- limit; on a cluster with several partitions, where no limits can be set,
-- the partition's own key, which stays absent). Beside it:
-- `<base0>run:<queue>` (ZSET of the task keys of the queue's RUNNING tasks,
-- kept for limited queues only), `<base0>bucket` (HASH queue ->
-- 'micro-tokens:ms' of the rate bucket) and `<base0>throttled` (HASH queue
-- -> claims a limit cut short). With no limits anywhere KEYS[8] does not
-- exist and a script pays one EXISTS for all of this.
local LIMITS_BASE -- per call: begin() below
local MICRO = 1000000

local limits_exist -- per call: begin() below
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
local slot_freed -- per call: begin() below
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

-- The state above that belongs to one call. A script prepended with this
-- file runs begin() once per call, right here; in the function library
-- (src/scripts.rs) these locals outlive a call, and every function calls
-- begin() first, so no call sees another's caches, count deltas or keys.
local function begin()
  levels_cache, touched, deltas = {}, {}, {}
  LIMITS_BASE = KEYS[8] and string.sub(KEYS[8], 1, -7) or ''
  limits_exist = nil
  slot_freed = false
end
begin()
