-- claim: up to ARGV[4] due tasks for worker ARGV[3] with a lease of ARGV[5] ms.
-- ARGV[6] is the call's nonce: a resent claim (fred retries a command whose
-- connection dropped) returns the tasks the first execution claimed instead
-- of claiming more. Returns {now, more_due (0|1), {{id, fields...}...},
-- {{id, reason}...}}: the last list holds the records set aside as corrupt
-- (set_aside in common.lua) instead of being claimed; the rest of the batch
-- is claimed as if they were not there (invariant 7).
local worker, limit, lease, nonce = ARGV[3], nat(ARGV[4], 100000), nat(ARGV[5]), ARGV[6]
if not (limit and lease) then return redis.error_reply('ERR claim: limit or lease is not a whole number') end
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
  return {int(now), 1, out, aside}
end

-- One more than asked tells whether due work is left behind.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit + 1)
if #ids == 0 then return {int(now), 0, out, aside} end
local more = 0
if #ids > limit then
  ids[#ids] = nil
  more = 1
end
-- From here on nothing can fail: every record is inspected (read with
-- pcall, fields checked) before anything is written for it.
zrem_all(KEYS[1], ids)
local until_ms = int(now + lease)
local now_s = int(now)
local leased, claimed = {}, {}
for _, id in ipairs(ids) do
  local tkey = task_key(id)
  local verdict, rec = inspect(id, 1, now)
  if verdict == 'ok' then
    local st = rec[1]
    local cancel_flag = rec[17]
    rec[1] = 'RUNNING'
    rec[4] = int((nat(rec[4]) or 0) + 1)
    rec[6] = int((nat(rec[6]) or 0) + 1)
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
    move(st, 'RUNNING')
    table.insert(rec, 1, id)
    out[#out + 1] = rec
  elseif verdict == 'aside' then
    aside[#aside + 1] = {id, rec}
  end
  -- 'ghost' and 'stale': an index entry without its task, already removed.
end
if more == 1 then wake() end
if #leased > 0 then
  zadd_all(KEYS[2], leased)
  redis.call('SET', last_key, nonce .. '\n' .. table.concat(claimed, '\n'), 'PX', int(math.max(lease, 1)))
end
flush_counts()
return {int(now), more, out, aside}
