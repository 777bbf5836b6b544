-- history: throughput per minute. KEYS[1] is the index ZSET
-- `<base0>history` (member and score: the minute's start in ms); each
-- minute is a HASH `<base0>history:<minute>` with fields `s:<name>`
-- (succeeded) and `f:<name>` (failed), integers. Every key shares partition
-- 0's hash tag, so the script touches one slot.
-- ARGV[1] 'add': ARGV[2] the call's nonce, then (name, succeeded, failed)
--   triples; adds them to the store's current minute; a resent call (same
--   nonce within 10 minutes) adds nothing again. Returns the minute.
-- ARGV[1] 'read': ARGV[2] since (ms); returns {minute, {field, value, ..}, ..}
--   for every minute at or after it, oldest first.
-- ARGV[1] 'trim': ARGV[2] before (ms); deletes every minute before it;
--   returns how many minutes went.
-- History only feeds charts, so a key of another type (made by hand) is
-- replaced rather than refused, and a field that is not an integer is
-- overwritten by the count added.
local index = KEYS[1]
local prefix = index .. ':'
local kind = redis.call('TYPE', index).ok
if kind ~= 'zset' and kind ~= 'none' then redis.call('DEL', index) end

if ARGV[1] == 'add' then
  if not redis.call('SET', prefix .. 'nonce:' .. ARGV[2], '1', 'NX', 'EX', 600) then
    return 'resent'
  end
  local now = now_ms()
  local minute = int(now - (now % 60000))
  local key = prefix .. minute
  local t = redis.call('TYPE', key).ok
  if t ~= 'hash' and t ~= 'none' then redis.call('DEL', key) end
  redis.call('ZADD', index, minute, minute)
  for i = 3, #ARGV, 3 do
    local name = ARGV[i]
    for j, f in ipairs({'s:', 'f:'}) do
      local n = ARGV[i + j]
      if n ~= '0' then
        local r = redis.pcall('HINCRBY', key, f .. name, n)
        if type(r) == 'table' and r.err then redis.call('HSET', key, f .. name, n) end
      end
    end
  end
  return minute
end

if ARGV[1] == 'read' then
  local since = nat(ARGV[2])
  if not since then return redis.error_reply('ERR history: since is not a whole number') end
  local out = {}
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', index, since, '+inf')) do
    local key = prefix .. m
    if redis.call('TYPE', key).ok == 'hash' then
      out[#out + 1] = m
      out[#out + 1] = redis.call('HGETALL', key)
    end
  end
  return out
end

if ARGV[1] == 'trim' then
  local before = nat(ARGV[2])
  if not before then return redis.error_reply('ERR history: before is not a whole number') end
  local gone = redis.call('ZRANGEBYSCORE', index, '-inf', '(' .. before)
  for _, m in ipairs(gone) do redis.call('DEL', prefix .. m) end
  redis.call('ZREMRANGEBYSCORE', index, '-inf', '(' .. before)
  return #gone
end

return redis.error_reply('ERR history: unknown operation ' .. tostring(ARGV[1]))
