-- Keys and levels: the partition's keys (the type check of its indexes,
-- task keys, the wake marker), the waiting levels of queues and priorities
-- with their registry, and the writes of many index entries at once.
-- Uses 01_values.

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

local function wake()
  if ARGV[2] == '1' then redis.pcall('ZADD', KEYS[6], 0, 'w') end
end

local function task_key(id)
  return ARGV[1] .. 't:' .. id
end

-- Named queues and priorities. A waiting task is indexed in the ZSET of
-- its level (queue, priority): the default queue at priority 0 is
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
local levels_cache -- per call: begin() in 07_begin
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
local touched -- per call: begin() in 07_begin
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
