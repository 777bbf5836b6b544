-- trim: deletes at most ARGV[5] finished tasks, oldest first: COMPLETED and
-- CANCELLED ones finished more than ARGV[3] ms ago or beyond the newest
-- ARGV[6] ('' no cap), dead-lettered ones more than ARGV[4] ms ago ('' keeps
-- them) or beyond the newest ARGV[7] ('' no cap). Records set aside as corrupt
-- live in the dead-letter index and go with it. A task found in the wrong
-- index that is also in its own (a stale entry) keeps its key. Returns the
-- number deleted.
local limit, keep_done, keep_dead = nat(ARGV[5], 100000), nat(ARGV[3]), nat(ARGV[4])
local max_done, max_dead = nat(ARGV[6]), nat(ARGV[7])
if not (limit and keep_done and (keep_dead or ARGV[4] == '')
    and (max_done or (ARGV[6] or '') == '') and (max_dead or (ARGV[7] or '') == '')) then
  return redis.error_reply('ERR trim: limit, retention or cap is not a whole number')
end
check_keys()
local now = now_ms()
local removed = 0
local function trim(index, keep_ms, max)
  if removed >= limit then return end
  local set = KEYS[index]
  -- Both rules doom a prefix of the index (oldest first): take the longer.
  local n = 0
  if keep_ms then n = redis.call('ZCOUNT', set, '-inf', '(' .. int(now - keep_ms)) end
  if max then
    local excess = redis.call('ZCARD', set) - max
    if excess > n then n = excess end
  end
  if n > limit - removed then n = limit - removed end
  if n <= 0 then return end
  local ids = redis.call('ZRANGE', set, 0, n - 1)
  if #ids == 0 then return end
  -- Keys to delete, in one DEL per 1,000 (not one command per task).
  local doomed = {}
  for _, id in ipairs(ids) do
    local tkey = task_key(id)
    -- One field by HGET (a key of another type answers an error table).
    local st = redis.pcall('HGET', tkey, 's')
    if type(st) ~= 'string' then st = nil end
    -- Trim deletes whatever the key holds: a record set aside as corrupt
    -- goes like any other once its retention has passed.
    if STATES[st or ''] and INDEX_OF[st] ~= index and redis.call('ZSCORE', KEYS[INDEX_OF[st]], id) then
      -- A stale entry: the task lives on in its own index.
    else
      -- A record whose state cannot be trusted (or an entry without a
      -- key) was counted under a state of this index.
      if STATES[st or ''] and INDEX_OF[st] == index then move(st, nil) else move(counted(index, nil), nil) end
      doomed[#doomed + 1] = tkey
      removed = removed + 1
    end
  end
  for i = 1, #doomed, 1000 do
    redis.call('DEL', unpack(doomed, i, math.min(i + 999, #doomed)))
  end
  zrem_all(set, ids)
end
trim(4, keep_done, max_done)
trim(3, keep_dead, max_dead)
flush_counts()
return removed
