-- Prepended to every script (see src/scripts.rs). Conventions:
--   KEYS: 1 due ZSET, 2 lease ZSET, 3 dead-letter ZSET, 4 finished ZSET,
--         5 debounce HASH, 6 wake ZSET, 7 counts HASH (all one hash tag).
--   ARGV[1]: the key base of the partition (`{re:<ns>}:`), ARGV[2]: '1' to
--   set the wake marker here.
-- Task keys (`<base>t:<id>`) are built from ARGV[1] because claim and reap
-- only learn ids from a ZSET; they share the hash tag of KEYS, so every
-- script touches one slot.

-- The task hash fields, in the order scripts return them to Rust (record.rs).
local FIELDS = {'s', 'n', 'p', 'a', 'm', 'f', 'c', 'd', 'b', 'z', 'x', 'o', 'r', 'e', 'w', 'l', 'q', 'k'}

local STATES = {CREATED = true, PENDING = true, RUNNING = true, COMPLETED = true,
  FAILED = true, TIMEOUT = true, ERROR = true, CANCELLED = true}

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Integers as plain digits: Lua would print large numbers as 1.7e+12.
local function int(n)
  return string.format('%d', n)
end

-- Count changes are gathered per call and written once per state. A count
-- that reaches zero is deleted, so a namespace whose tasks are all gone
-- leaves no counts hash behind (Redis drops an empty hash).
local deltas = {}
local function move(from, to)
  if from then deltas[from] = (deltas[from] or 0) - 1 end
  if to then deltas[to] = (deltas[to] or 0) + 1 end
end
local function flush_counts()
  for state, d in pairs(deltas) do
    if d ~= 0 and redis.call('HINCRBY', KEYS[7], state, d) == 0 then
      redis.call('HDEL', KEYS[7], state)
    end
  end
end

local function wake()
  if ARGV[2] == '1' then redis.call('ZADD', KEYS[6], 0, 'w') end
end

local function task_key(id)
  return ARGV[1] .. 't:' .. id
end

local function record(tkey)
  return redis.call('HMGET', tkey, unpack(FIELDS))
end

-- Dead letter or finished set for a terminal state.
local function finished_set(state)
  if state == 'COMPLETED' or state == 'CANCELLED' then return KEYS[4] end
  return KEYS[3]
end
