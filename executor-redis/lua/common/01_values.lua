-- Values: the first part of the prelude that every script but a few takes
-- (src/scripts.rs assembles the parts in the order of their numbers: the
-- top of the function library, or prepended to each script where the
-- server runs no functions). Holds the conventions all parts share, the
-- task hash's fields and states, and whole numbers and text as the scripts
-- check and write them. Uses no other part.
--
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
-- before it writes: the partition's own keys are of their type
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
-- read it (see append_attempt in 04_attempt_log), so claims stay as lean as before.
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
