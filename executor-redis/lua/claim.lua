-- claim: up to ARGV[4] due tasks for worker ARGV[3] with a lease of ARGV[5] ms.
-- ARGV[6] is the call's nonce: a resent claim (fred retries a command whose
-- connection dropped) returns the tasks the first execution claimed instead
-- of claiming more. Returns {now, more_due (0|1), {{id, fields...}...}}.
local worker, limit, lease, nonce = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local now = now_ms()
local last_key = ARGV[1] .. 'lc:' .. worker
local out = {}

local previous = redis.call('GET', last_key)
if previous and string.sub(previous, 1, #nonce + 1) == nonce .. '\n' then
  for id in string.gmatch(string.sub(previous, #nonce + 2), '[^\n]+') do
    local rec = record(task_key(id))
    if rec[1] == 'RUNNING' and rec[15] == worker then
      table.insert(rec, 1, id)
      out[#out + 1] = rec
    end
  end
  return {int(now), 1, out}
end

-- One more than asked tells whether due work is left behind.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit + 1)
if #ids == 0 then return {int(now), 0, out} end
local more = 0
if #ids > limit then
  ids[#ids] = nil
  more = 1
  wake()
end
redis.call('ZREM', KEYS[1], unpack(ids))
local until_ms = int(now + lease)
local now_s = int(now)
local leased, claimed = {}, {}
for _, id in ipairs(ids) do
  local tkey = task_key(id)
  local rec = record(tkey)
  local st = rec[1]
  if st == 'CREATED' or st == 'PENDING' then
    local attempts, fence = tonumber(rec[4] or '0'), tonumber(rec[6] or '0')
    if attempts and fence then
      local cancel_flag = rec[17]
      rec[1] = 'RUNNING'
      rec[4] = int(attempts + 1)
      rec[6] = int(fence + 1)
      rec[9] = now_s
      rec[15] = worker
      rec[16] = until_ms
      rec[17] = false
      redis.call('HSET', tkey, 's', 'RUNNING', 'a', rec[4], 'f', rec[6], 'b', rec[9], 'w', worker, 'l', until_ms)
      if rec[18] then
        if redis.call('HGET', KEYS[5], rec[18]) == id then redis.call('HDEL', KEYS[5], rec[18]) end
      end
      if cancel_flag then redis.call('HDEL', tkey, 'q') end
      leased[#leased + 1] = until_ms
      leased[#leased + 1] = id
      claimed[#claimed + 1] = id
      move(st, 'RUNNING')
      table.insert(rec, 1, id)
      out[#out + 1] = rec
    else
      redis.call('HSET', tkey, 's', 'ERROR', 'z', int(now),
        'e', 'corrupt task record: attempts or fence is not a number')
      redis.call('ZADD', KEYS[3], int(now), id)
      move(st, 'ERROR')
    end
  elseif st and not STATES[st] then
    redis.call('HSET', tkey, 's', 'ERROR', 'z', int(now), 'e', 'corrupt task record: unknown state ' .. st)
    redis.call('ZADD', KEYS[3], int(now), id)
    move(nil, 'ERROR')
  end
  -- A missing hash or another state: a stale index entry, already removed.
end
if #leased > 0 then
  redis.call('ZADD', KEYS[2], unpack(leased))
  redis.call('SET', last_key, nonce .. '\n' .. table.concat(claimed, '\n'), 'PX', int(lease))
end
flush_counts()
return {int(now), more, out}
