-- schedule: the cron schedules of a namespace. KEYS[1] definitions HASH,
-- name -> the Schedule as JSON; KEYS[2] states HASH, name -> '<paused 0|1>
-- <cursor ms> <fence> <nonce of the last advance, or -> [<last task id>]'
-- (task ids hold no whitespace). Both keys share the namespace's hash tag,
-- so each call is one atomic step on one slot. A schedule exists while its
-- definition does; put writes both fields and remove deletes both.
--
-- ARGV[1] is the operation:
--   'put' name json: stores the definition; a new schedule (or one whose
--     state is missing or does not parse) starts unpaused at the store's now,
--     fence 0, no task. Returns 1.
--   'list': {name, json, state or false, ...} of every definition; Rust
--     parses them and leaves out what does not parse.
--   'remove' name: returns 1 if it existed, else 0.
--   'pause' name '0'|'1': returns 1 if it exists, else 0.
--   'advance' name from to token nonce task ('' for none): moves the cursor
--     if it is still `from` and the stored fence is at most `token`.
--     Returns 1 if it moved, else 0; a resend (same nonce) answers 1 again.
--
-- Nothing is written before every check has passed: Redis does not roll
-- back a script that fails half way.

local DEF_KEY, STATE_KEY = KEYS[1], KEYS[2]
for _, key in ipairs({DEF_KEY, STATE_KEY}) do
  local t = redis.call('TYPE', key).ok
  if t ~= 'none' and t ~= 'hash' then
    error({err = 'WRONGTYPE ' .. key .. ' holds a ' .. t .. ', not a hash (edited by hand?): ' ..
      'nothing was changed; delete or repair that key'})
  end
end

-- {paused, cursor, fence, nonce, task or false} of a stored state, or nil
-- when it does not have that shape. Numbers go through nat(), so cursor
-- and fence compare exactly (both stay below 2^53).
local function parse(s)
  if type(s) ~= 'string' then return nil end
  local p, c, f, n, rest = string.match(s, '^([01]) (%d+) (%d+) (%S+)(.*)$')
  if not p then return nil end
  local cursor, fence = nat(c), nat(f)
  if not cursor or not fence then return nil end
  local task = false
  if rest ~= '' then
    task = string.match(rest, '^ (%S+)$')
    if not task then return nil end
  end
  return {p, cursor, fence, n, task}
end

local function write(name, st)
  local s = st[1] .. ' ' .. int(st[2]) .. ' ' .. int(st[3]) .. ' ' .. st[4]
  if st[5] then s = s .. ' ' .. st[5] end
  redis.call('HSET', STATE_KEY, name, s)
end

-- The state of an existing schedule, refusing one that does not parse: a
-- pause or advance cannot keep the fields it does not change.
local function existing(name)
  local st = parse(redis.call('HGET', STATE_KEY, name))
  if not st then
    error({err = 'ERR schedule `' .. shown(name) .. '`: its stored state in ' .. STATE_KEY ..
      ' does not parse (edited by hand?): nothing was changed; put the schedule again to reset ' ..
      'its state, or remove it'})
  end
  return st
end

local op, name = ARGV[1], ARGV[2]
if op == 'put' then
  if not parse(redis.call('HGET', STATE_KEY, name)) then
    write(name, {'0', now_ms(), 0, '-', false})
  end
  redis.call('HSET', DEF_KEY, name, ARGV[3])
  return 1
elseif op == 'list' then
  local defs = redis.call('HGETALL', DEF_KEY)
  local out = {}
  for i = 1, #defs, 2 do
    out[#out + 1] = defs[i]
    out[#out + 1] = defs[i + 1]
    out[#out + 1] = redis.call('HGET', STATE_KEY, defs[i])
  end
  return out
elseif op == 'remove' then
  local existed = redis.call('HDEL', DEF_KEY, name)
  redis.call('HDEL', STATE_KEY, name)
  return existed
elseif op == 'pause' then
  if redis.call('HEXISTS', DEF_KEY, name) == 0 then return 0 end
  local st = existing(name)
  st[1] = ARGV[3]
  write(name, st)
  return 1
elseif op == 'advance' then
  local from, to, token = nat(ARGV[3]), nat(ARGV[4]), nat(ARGV[5])
  if not (from and to and token) then
    return redis.error_reply('ERR schedule advance: from, to and token must be whole numbers')
  end
  if redis.call('HEXISTS', DEF_KEY, name) == 0 then return 0 end
  local st = existing(name)
  -- fred resends a call whose connection dropped: the nonce of the move
  -- that already happened answers as the first execution did.
  if st[4] == ARGV[6] then return 1 end
  if st[2] ~= from or st[3] > token then return 0 end
  st[2], st[3], st[4] = to, token, ARGV[6]
  if ARGV[7] ~= '' then st[5] = ARGV[7] end
  write(name, st)
  return 1
end
return redis.error_reply('ERR schedule: unknown operation ' .. shown(op or ''))
