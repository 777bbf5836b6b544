-- Records: how a task is stored, read and written. Uses 01_values.
--
-- A task is one string at its key (`<base>t:<id>`): a MessagePack array of
-- the values of LETTERS in that order, each a string or false (absent). One
-- key read and one key write per task and call, whatever fields change:
-- a claim or a finish reads its tasks with one MGET and writes them back
-- with one MSET. The previous model kept a hash per task with the same
-- fields; such a hash is still read as the record it holds and becomes a
-- string at its next write, so a namespace written by an older release
-- drains without a step of its own.
--
-- Scripts never change a record's key directly: they read with record(),
-- fields() or load(), and write with put(), which changes the record read
-- (the call's copy) and writes it at once, or, in a call that batches
-- (batch_records()), at flush_records().

-- FIELDS, then the fields never returned to Rust as part of a record (see
-- 01_values). A record may hold more values than these (a later release's
-- fields): they are kept as they are.
local LETTERS = {'s', 'n', 'p', 'a', 'm', 'f', 'c', 'd', 'b', 'z', 'x', 'o', 'r', 'e', 'w', 'l', 'q', 'k', 'g', 'v',
  'h', 'u', 'y'}
local RECORD_LEN = #LETTERS
-- (No global is read at the top level: a function library may not.)
local POS = {}
for i = 1, RECORD_LEN do POS[LETTERS[i]] = i end
-- A key without a record: every field absent.
local NONE = {}
for i = 1, RECORD_LEN do NONE[i] = false end

-- Per call (begin() in 08_begin): the records read so far (key -> the
-- record, false for a key that holds no record, or NONE for no key), the
-- keys written but not yet stored, and whether writes wait for
-- flush_records().
local recs, dirty, dirty_keys, batching

-- The record a stored string holds, or nil: exactly one MessagePack array
-- of at least RECORD_LEN values, each a string or false.
local function decode(raw)
  local ok, at, rec = pcall(cmsgpack.unpack_one, raw)
  if not ok or at ~= -1 or type(rec) ~= 'table' or #rec < RECORD_LEN then return nil end
  for i = 1, RECORD_LEN do
    local v = rec[i]
    if v ~= false and type(v) ~= 'string' then return nil end
  end
  return rec
end

-- The value read for `tkey` from its GET or MGET reply `raw` (`absent`:
-- the nil reply is known to mean no key). A record of the previous model
-- (a hash) is read field by field.
local function read_key(tkey, raw, absent)
  if type(raw) == 'string' then return decode(raw) or false end
  if raw == false then
    -- A nil reply: no key, or (from MGET) a key of another type.
    if absent or redis.call('EXISTS', tkey) == 0 then return NONE end
  end
  if redis.call('TYPE', tkey).ok == 'hash' then return redis.call('HMGET', tkey, unpack(LETTERS)) end
  return false
end

-- The call's copy of the record at `tkey`: a table, nil for no key, or
-- false for a key that holds something else (another type, or a string
-- that is not a record).
local function load(tkey)
  local rec = recs[tkey]
  if rec == nil then
    rec = read_key(tkey, redis.pcall('GET', tkey))
    recs[tkey] = rec
  end
  if rec == NONE then return nil end
  return rec
end

-- Reads the records of `tkeys` not read yet with one MGET per 1,000. MGET
-- answers nil for a key of another type too: one EXISTS of the keys it
-- answered nil for tells, in the common case, that none of them exists
-- (a batch of new tasks); else each is looked at.
local function load_all(tkeys)
  local wanted = {}
  for _, tkey in ipairs(tkeys) do
    if recs[tkey] == nil then wanted[#wanted + 1] = tkey end
  end
  for i = 1, #wanted, 1000 do
    local chunk = {unpack(wanted, i, math.min(i + 999, #wanted))}
    local raws = redis.call('MGET', unpack(chunk))
    local nils = {}
    for j, tkey in ipairs(chunk) do
      if raws[j] == false then nils[#nils + 1] = tkey end
    end
    local absent = #nils > 0 and redis.call('EXISTS', unpack(nils)) == 0
    for j, tkey in ipairs(chunk) do recs[tkey] = read_key(tkey, raws[j], absent) end
  end
end

-- The FIELDS of the record at `tkey` (a new table: every field false for
-- no key), or false when the key holds something else.
local function record(tkey)
  local rec = load(tkey)
  if rec == false then return false end
  return {unpack(rec or NONE, 1, #FIELDS)}
end

-- Some fields of the record at `tkey`, by letter, or false when the key
-- holds something else.
local function fields(tkey, ...)
  local rec = load(tkey)
  if rec == false then return false end
  rec = rec or NONE
  local out = {}
  for i = 1, select('#', ...) do out[i] = rec[POS[select(i, ...)]] end
  return out
end

-- The record at `tkey` as a string to store.
local function encode(tkey)
  return cmsgpack.pack(recs[tkey])
end

-- Sets fields of the record at `tkey` (creating it when there is no key):
-- pairs of letter and value, a value of false removing the field. Numbers
-- are written as digits.
local function put(tkey, ...)
  local rec = load(tkey)
  if not rec then
    rec = {unpack(NONE)}
    recs[tkey] = rec
  end
  for i = 1, select('#', ...), 2 do
    local l, v = select(i, ...)
    if type(v) == 'number' then v = int(v) elseif v == nil then v = false end
    rec[POS[l]] = v
  end
  if not batching then
    redis.call('SET', tkey, encode(tkey))
  elseif not dirty_keys[tkey] then
    dirty_keys[tkey] = true
    dirty[#dirty + 1] = tkey
  end
end

-- The key `tkey` was deleted.
local function forget(tkey)
  recs[tkey] = NONE
end

-- Writes wait for flush_records(): one MSET for every record the call
-- changed.
local function batch_records()
  batching = true
end

local function flush_records()
  local args = {}
  for _, tkey in ipairs(dirty) do
    if type(recs[tkey]) == 'table' and recs[tkey] ~= NONE then
      args[#args + 1] = tkey
      args[#args + 1] = encode(tkey)
      if #args >= 1000 then
        redis.call('MSET', unpack(args))
        args = {}
      end
    end
  end
  if #args > 0 then redis.call('MSET', unpack(args)) end
  dirty, dirty_keys = {}, {}
end

-- Why the key `tkey` holds no record.
local function not_a_record(tkey)
  local t = redis.call('TYPE', tkey).ok
  if t == 'string' then return 'the key holds a string that is not a task record' end
  return 'the key holds a ' .. t .. ', not a task record'
end

-- Some fields of a hash that is not a task (the leader's term), or false
-- when the key holds another type of value.
local function hash_fields(key, ...)
  local rec = redis.pcall('HMGET', key, ...)
  if rec.err then return false end
  return rec
end
