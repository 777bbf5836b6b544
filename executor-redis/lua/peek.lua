-- peek: the store's now in microseconds and the due time (ms) of the
-- earliest waiting task, for the wake-up wait. ARGV[3..] name the queues
-- looked at; paused queues are left out, since their due tasks are no work
-- for a claimer (it would spin). So are
-- queues at their concurrency limit or held by unreadable limits (the task
-- that leaves RUNNING in such a queue sets the wake marker: `unrun` in
-- common/05_limits.lua); a queue whose bucket has no whole token counts
-- from when the next one is earned. Only levels in the registry
-- (common/02_keys.lua) are read. Returns {now_us, due or false}.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local first = nil
local function earliest(key, f)
  local e = redis.pcall('ZRANGE', key, 0, 0, 'WITHSCORES')
  if type(e) == 'table' and not e.err and e[2] then
    local s = tonumber(e[2])
    if s and (not f or s < f) then return s end
  end
  return f
end
-- The earliest a claim could take a task of `q` from the levels `keys`.
local function consider(q, keys)
  local f = nil
  for _, key in ipairs(keys) do f = earliest(key, f) end
  if not f then return end
  local lim = limits_of(q)
  if lim == false then return end
  if lim and lim.c then
    local running = redis.pcall('ZCARD', run_key(q))
    if type(running) ~= 'number' or running >= lim.c then return end
  end
  if lim and lim.starts then
    local micro = bucket_of(q, lim, now)
    if micro < MICRO then
      -- A millisecond more, so the claim finds the token earned.
      f = math.max(f, now + math.ceil((MICRO - micro) * lim.per / (lim.starts * MICRO)) + 1)
    end
  end
  if not first or f < first then first = f end
end
local paused = redis.pcall('SMEMBERS', paused_key())
local is_paused = {}
if type(paused) == 'table' and not paused.err then
  for _, q in ipairs(paused) do is_paused[q] = true end
end
for i = 3, #ARGV do
  local q = ARGV[i]
  if valid_queue(q) and not is_paused[q] then
    local keys = {}
    for _, lv in ipairs(queue_levels(q)) do keys[#keys + 1] = lv[1] end
    consider(q, keys)
  end
end
return {t[1] .. string.format('%06d', tonumber(t[2])), first and int(first) or false}
