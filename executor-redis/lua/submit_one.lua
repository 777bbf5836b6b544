-- submit_one: the lone submit's path, one plain ('p') or idempotent ('i')
-- task, with none of the prelude (lua/common, whose definitions every call
-- would run again where the scripts are not a function library) and only
-- what it reads. Every Redis call and every Lua string costs a lone submit's round
-- trip (docs/benchmarks.md § One submit at a time), so the common case
-- takes one pattern match, four calls (EXISTS, TIME, ZADD, HSET) and the
-- count and wake marker, and answers with a bare integer.
-- KEYS: 1 the partition's due ZSET, 2 the wake ZSET (only where scripts
-- set the wake marker). ARGV: 1 thirteen values joined by newlines: key
-- base, id, name, due kind (n|a|t), due value, max_attempts, max_duration,
-- timeout, retry, mode, nonce, queue, priority (submit.lua's values less
-- the payload and the debounce ones; none can hold a newline, and a call
-- whose count is off is refused before anything is written); 2 the payload.
-- Answers `now` (an integer, the server's clock in ms) when it created the
-- task, else exactly as submit.lua does for the same task, and writes the
-- same record: checks first (the numbers, the task key, the waiting
-- index), then writes. A task of the default queue at priority 0 goes to
-- KEYS[1] as before queues existed; any other to its level's ZSET,
-- registered as common/02_keys.lua does.
local base, id, name, due_kind, due_value, max_attempts, max_duration, timeout, retry, mode, nonce, queue,
  priority = string.match(ARGV[1] or '',
  '^([^\n]*)\n([^\n]*)\n([^\n]*)\n([nat])\n(%d*)\n(%d+)\n(%d*)\n(%d*)\n([^\n]*)\n([pi])\n([^\n]*)\n([%w%-_%.:]*)\n(%d?)$')
local function answer(...)
  local tm = redis.call('TIME')
  return {string.format('%d', tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)), {{...}}}
end
-- The pattern takes well-formed values whose numbers are short enough to
-- be in range (under 16 digits, max_attempts under 10); anything else is
-- checked value by value, as before the pattern, for the exact answer.
if not (#ARGV == 2 and base and (due_kind == 'n' or (#due_value > 0 and #due_value < 16)) and
    #max_attempts < 10 and #max_duration < 16 and #timeout < 16 and #queue <= 64) then
  if #ARGV ~= 2 then return redis.error_reply('ERR submit_one: wrong number of arguments') end
  local SAFE, U32 = 9007199254740991, 4294967295
  local function nat(v, max)
    if type(v) ~= 'string' or #v == 0 or #v > 16 or string.find(v, '[^0-9]') then return nil end
    local n = tonumber(v)
    if n > (max or SAFE) then return nil end
    return n
  end
  local v, count = {}, 0
  for s in string.gmatch(ARGV[1] .. '\n', '([^\n]*)\n') do
    count = count + 1
    v[count] = s
  end
  if count ~= 13 then return redis.error_reply('ERR submit_one: wrong number of values') end
  base, id, name, due_kind, due_value, max_attempts = v[1], v[2], v[3], v[4], v[5], v[6]
  max_duration, timeout, retry, mode, nonce, queue, priority = v[7], v[8], v[9], v[10], v[11], v[12], v[13]
  if mode ~= 'p' and mode ~= 'i' then return redis.error_reply('ERR submit_one: only plain and idempotent tasks') end
  local bad
  if not (due_kind == 'n' or nat(due_value)) then bad = 'due'
  elseif not nat(max_attempts, U32) then bad = 'max_attempts'
  elseif max_duration ~= '' and not nat(max_duration) then bad = 'max_duration'
  elseif timeout ~= '' and not nat(timeout) then bad = 'timeout'
  elseif queue ~= '' and (#queue > 64 or string.find(queue, '[^%w%-_%.:]')) then bad = 'queue'
  elseif priority ~= '' and not nat(priority, 9) then bad = 'priority' end
  if bad then return answer('invalid', id, bad .. ' is not a whole number') end
end
if priority == '0' then priority = '' end
local tkey = base .. 't:' .. id
if redis.call('EXISTS', tkey) == 1 then
  local kind = redis.call('TYPE', tkey).ok
  if kind ~= 'hash' then return answer('corrupt', id, 'the key holds a ' .. kind .. ', not a task hash') end
  if nonce ~= '' and redis.call('HGET', tkey, 'h') == nonce then return answer('created', id) end
  if mode == 'i' then return answer('existing', id) end
  return answer('duplicate', id)
end
local tm = redis.call('TIME')
local now = tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000)
local created = string.format('%d', now)
local due = created
if due_kind == 'a' then
  due = string.format('%d', now + tonumber(due_value))
elseif due_kind == 't' then
  due = string.format('%d', tonumber(due_value))
end
local level = KEYS[1]
if (queue ~= '' and queue ~= 'default') or priority ~= '' then
  level = base .. 'qd:' .. (priority ~= '' and priority or '0') .. ':' .. (queue ~= '' and queue or 'default')
end
-- The first write: a waiting index of another type refuses it, and nothing
-- has been written.
local added = redis.pcall('ZADD', level, due, id)
if type(added) == 'table' then
  return redis.error_reply('WRONGTYPE ' .. level .. ' holds a ' .. redis.call('TYPE', level).ok ..
    ', not a zset (edited by hand?): nothing was changed; delete or repair that key')
end
-- Attempts and fence start at 0 and are left out until a claim sets them.
if max_duration == '' and timeout == '' and retry == '' and nonce ~= '' and queue == '' and priority == '' then
  redis.call('HSET', tkey, 's', 'CREATED', 'n', name, 'p', ARGV[2], 'm', max_attempts, 'c', created, 'd', due,
    'h', nonce)
else
  if level ~= KEYS[1] then
    -- The registry (common/02_keys.lua): the level's digit among its queue's.
    local q, p = (queue ~= '' and queue or 'default'), (priority ~= '' and priority or '0')
    local digits = redis.pcall('HGET', base .. 'queues', q)
    if type(digits) ~= 'string' then digits = '' end
    if not string.find(digits, p, 1, true) then
      local s = ''
      for d = 9, 0, -1 do
        if d == tonumber(p) or string.find(digits, tostring(d), 1, true) then s = s .. d end
      end
      redis.pcall('HSET', base .. 'queues', q, s)
    end
  end
  local f = {'s', 'CREATED', 'n', name, 'p', ARGV[2], 'm', max_attempts, 'c', created, 'd', due}
  if max_duration ~= '' then
    f[#f + 1] = 'x'; f[#f + 1] = string.format('%d', now + tonumber(max_duration))
  end
  if timeout ~= '' then f[#f + 1] = 'o'; f[#f + 1] = timeout end
  if retry ~= '' then f[#f + 1] = 'r'; f[#f + 1] = retry end
  if nonce ~= '' then f[#f + 1] = 'h'; f[#f + 1] = nonce end
  if queue ~= '' then f[#f + 1] = 'g'; f[#f + 1] = queue end
  if priority ~= '' then f[#f + 1] = 'v'; f[#f + 1] = priority end
  redis.call('HSET', tkey, unpack(f))
end
-- A count that is not a number (edited by hand) is replaced, as
-- `flush_counts` in common/03_counts.lua does.
local n = redis.pcall('HINCRBY', base .. 'counts', 'CREATED', 1)
if type(n) == 'table' then redis.pcall('HSET', base .. 'counts', 'CREATED', 1) end
if KEYS[2] then redis.pcall('ZADD', KEYS[2], 0, 'w') end
return now
