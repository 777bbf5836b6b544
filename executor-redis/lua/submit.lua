-- submit: many tasks in one call. ARGV[3] = n, then 14 values per task:
-- id, name, payload, due kind (n|a|t), due value, max_attempts, max_duration,
-- timeout, retry, mode (p|i|d), debounce key, window, max_wait, nonce.
-- Returns {now, {outcome, id}...}; outcome created|existing|debounced|duplicate.
-- A resent plain submit (same nonce) answers `created` again, not `duplicate`.
local n = tonumber(ARGV[3])
local now = now_ms()
local now_s = int(now)
local out = {}
-- Due entries are written with one ZADD at the end (a later entry for the
-- same id wins, as it would have one by one).
local queued = {}
for i = 0, n - 1 do
  local b = 3 + i * 14
  local id, name, payload = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
  local due_kind, due_value, max_attempts = ARGV[b + 4], tonumber(ARGV[b + 5]), ARGV[b + 6]
  local max_duration, timeout, retry, mode = ARGV[b + 7], ARGV[b + 8], ARGV[b + 9], ARGV[b + 10]
  local dkey, window, max_wait, nonce = ARGV[b + 11], ARGV[b + 12], ARGV[b + 13], ARGV[b + 14]
  local result
  if mode == 'd' then
    local bound = redis.call('HGET', KEYS[5], dkey)
    if bound then
      local bkey = task_key(bound)
      local st, created = unpack(redis.call('HMGET', bkey, 's', 'c'))
      if st == 'CREATED' or st == 'PENDING' then
        local due = now + tonumber(window)
        created = tonumber(created)
        if max_wait ~= '' and created then due = math.min(due, created + tonumber(max_wait)) end
        redis.call('HSET', bkey, 'p', payload, 'd', int(due))
        queued[#queued + 1] = int(due)
        queued[#queued + 1] = bound
        result = {'debounced', bound}
      end
    end
  end
  if not result then
    local tkey = task_key(id)
    if redis.call('EXISTS', tkey) == 1 then
      if mode == 'i' then
        result = {'existing', id}
      elseif nonce ~= '' and redis.call('HGET', tkey, 'u') == nonce then
        result = {'created', id}
      else
        result = {'duplicate', id}
      end
    else
      local due = now
      if mode == 'd' then
        due = now + tonumber(window)
        if max_wait ~= '' then due = math.min(due, now + tonumber(max_wait)) end
      elseif due_kind == 'a' then
        due = now + due_value
      elseif due_kind == 't' then
        due = due_value
      end
      -- Attempts and fence start at 0 and are left out until a claim sets them.
      local f = {'s', 'CREATED', 'n', name, 'p', payload, 'm', max_attempts, 'c', now_s, 'd', int(due)}
      if max_duration ~= '' then
        f[#f + 1] = 'x'
        f[#f + 1] = int(now + tonumber(max_duration))
      end
      if timeout ~= '' then f[#f + 1] = 'o'; f[#f + 1] = timeout end
      if retry ~= '' then f[#f + 1] = 'r'; f[#f + 1] = retry end
      if mode == 'd' then
        f[#f + 1] = 'k'; f[#f + 1] = dkey
        redis.call('HSET', KEYS[5], dkey, id)
      end
      if nonce ~= '' then f[#f + 1] = 'u'; f[#f + 1] = nonce end
      redis.call('HSET', tkey, unpack(f))
      queued[#queued + 1] = int(due)
      queued[#queued + 1] = id
      move(nil, 'CREATED')
      result = {'created', id}
    end
  end
  out[#out + 1] = result
end
if #queued > 0 then redis.call('ZADD', KEYS[1], unpack(queued)) end
flush_counts()
wake()
return {int(now), out}
