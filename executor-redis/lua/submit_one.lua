-- submit_one: the lone submit's path, one plain ('p') or idempotent ('i')
-- task, with none of common.lua (whose definitions every call would run
-- again) and only what it reads. KEYS: 1 due ZSET, 2 wake ZSET, 3 counts
-- HASH of the partition. ARGV: 1 key base, 2 '1' to set the wake marker,
-- then id, name, payload, due kind (n|a|t), due value, max_attempts,
-- max_duration, timeout, retry, mode, nonce (submit.lua's values less the
-- debounce ones). Answers exactly as submit.lua does for the same task, and
-- writes the same record: checks first (the numbers, the task key, the due
-- index), then writes.
local SAFE, U32 = 9007199254740991, 4294967295
local function nat(v, max)
  if type(v) ~= 'string' or #v == 0 or #v > 16 or string.find(v, '[^0-9]') then return nil end
  local n = tonumber(v)
  if n > (max or SAFE) then return nil end
  return n
end
local function int(n)
  return string.format('%d', n)
end
if #ARGV ~= 13 then return redis.error_reply('ERR submit_one: wrong number of arguments') end
local id, name, payload = ARGV[3], ARGV[4], ARGV[5]
local due_kind, due_value, max_attempts = ARGV[6], ARGV[7], ARGV[8]
local max_duration, timeout, retry, mode, nonce = ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13]
if mode ~= 'p' and mode ~= 'i' then return redis.error_reply('ERR submit_one: only plain and idempotent tasks') end
local function answer(...)
  local tm = redis.call('TIME')
  return {int(tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)), {{...}}}
end
local bad
if not (due_kind == 'n' or nat(due_value)) then bad = 'due'
elseif not nat(max_attempts, U32) then bad = 'max_attempts'
elseif max_duration ~= '' and not nat(max_duration) then bad = 'max_duration'
elseif timeout ~= '' and not nat(timeout) then bad = 'timeout' end
if bad then return answer('invalid', id, bad .. ' is not a whole number') end
local tkey = ARGV[1] .. 't:' .. id
local kind = redis.call('TYPE', tkey).ok
if kind == 'hash' then
  if nonce ~= '' and redis.call('HGET', tkey, 'h') == nonce then return answer('created', id) end
  if mode == 'i' then return answer('existing', id) end
  return answer('duplicate', id)
elseif kind ~= 'none' then
  return answer('corrupt', id, 'the key holds a ' .. kind .. ', not a task hash')
end
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local due = now
if due_kind == 'a' then due = now + nat(due_value) elseif due_kind == 't' then due = nat(due_value) end
-- The first write: a due index of another type refuses it, and nothing
-- has been written.
local added = redis.pcall('ZADD', KEYS[1], int(due), id)
if type(added) == 'table' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. redis.call('TYPE', KEYS[1]).ok ..
    ', not a zset (edited by hand?): nothing was changed; delete or repair that key')
end
-- Attempts and fence start at 0 and are left out until a claim sets them.
local f = {'s', 'CREATED', 'n', name, 'p', payload, 'm', max_attempts, 'c', int(now), 'd', int(due)}
if max_duration ~= '' then f[#f + 1] = 'x'; f[#f + 1] = int(now + nat(max_duration)) end
if timeout ~= '' then f[#f + 1] = 'o'; f[#f + 1] = timeout end
if retry ~= '' then f[#f + 1] = 'r'; f[#f + 1] = retry end
if nonce ~= '' then f[#f + 1] = 'h'; f[#f + 1] = nonce end
redis.call('HSET', tkey, unpack(f))
-- A count that is not a number (edited by hand) is replaced, as
-- common.lua's flush_counts does.
local n = redis.pcall('HINCRBY', KEYS[3], 'CREATED', 1)
if type(n) == 'table' then redis.pcall('HSET', KEYS[3], 'CREATED', 1) end
if ARGV[2] == '1' then redis.pcall('ZADD', KEYS[2], 0, 'w') end
return {int(now), {{'created', id}}}
