-- peek: the store's now in microseconds and the due time (ms) of the
-- earliest waiting task, for the wake-up wait. ARGV[3..] name the queues
-- looked at (none: every queue); paused queues are left out either way,
-- since their due tasks are no work for a claimer (it would spin). Only
-- levels in the registry (common.lua) are read. Returns {now_us, due or false}.
local t = redis.call('TIME')
local first = nil
local function consider(key)
  local e = redis.pcall('ZRANGE', key, 0, 0, 'WITHSCORES')
  if type(e) == 'table' and not e.err and e[2] then
    local s = tonumber(e[2])
    if s and (not first or s < first) then first = s end
  end
end
local paused = redis.pcall('SMEMBERS', paused_key())
local is_paused = {}
if type(paused) == 'table' and not paused.err then
  for _, q in ipairs(paused) do is_paused[q] = true end
end
if #ARGV < 3 then
  if not is_paused[DEFAULT_QUEUE] then consider(KEYS[1]) end
  for _, lv in ipairs(all_levels()) do
    if not is_paused[lv[2]] then consider(lv[1]) end
  end
else
  for i = 3, #ARGV do
    local q = ARGV[i]
    if valid_queue(q) and not is_paused[q] then
      for _, lv in ipairs(queue_levels(q)) do consider(lv[1]) end
    end
  end
end
return {t[1] .. string.format('%06d', tonumber(t[2])), first and int(first) or false}
