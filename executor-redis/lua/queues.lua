-- queues: read only. The queues of the partition as an operator sees them:
-- {now, {queue, waiting, due, oldest due or false, running}...,
-- {paused queues}, {queue, limits, throttled total}...}; the limits
-- (common/05_limits.lua) only when ARGV[3] is '1' (asked of partition 0 alone, since
-- every partition's KEYS[8] is the same hash). Running tasks are counted
-- from the partition's lease ZSET, one HMGET each.
-- A queue's waiting tasks are the ZCARD of its levels (common/02_keys.lua), the due
-- ones their ZCOUNT up to now, its oldest due the smallest first score that
-- is not in the future; the default queue at priority 0 is KEYS[1].
local now = now_ms()
local per = {}
local order = {}
local function add(q, key)
  local n = redis.pcall('ZCARD', key)
  if type(n) ~= 'number' then return end
  local entry = per[q]
  if not entry then
    entry = {q, 0, 0, false, 0}
    per[q] = entry
    order[#order + 1] = q
  end
  entry[2] = entry[2] + n
  if n > 0 then
    entry[3] = entry[3] + redis.call('ZCOUNT', key, '-inf', now)
    local e = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    local s = e[2] and tonumber(e[2])
    if s and s <= now and (not entry[4] or s < entry[4]) then entry[4] = s end
  end
end
add(DEFAULT_QUEUE, KEYS[1])
for _, lv in ipairs(all_levels()) do add(lv[2], lv[1]) end
for q, tkeys in pairs(running_by_queue({KEYS[2]}, nil)) do
  local entry = per[q]
  if not entry then
    entry = {q, 0, 0, false, 0}
    per[q] = entry
    order[#order + 1] = q
  end
  entry[5] = #tkeys
end
local out = {int(now)}
for _, q in ipairs(order) do
  local e = per[q]
  out[#out + 1] = {e[1], e[2], e[3], e[4] and int(e[4]) or false, e[5]}
end
local paused = redis.pcall('SMEMBERS', paused_key())
if type(paused) ~= 'table' or paused.err then paused = {} end
out[#out + 1] = paused
local limits = {}
if ARGV[3] == '1' then
  local all = redis.pcall('HGETALL', KEYS[8])
  if type(all) == 'table' and not all.err then
    local totals = redis.pcall('HGETALL', throttled_key())
    local thr = {}
    if type(totals) == 'table' and not totals.err then
      for i = 1, #totals, 2 do thr[totals[i]] = totals[i + 1] end
    end
    for i = 1, #all, 2 do
      limits[#limits + 1] = all[i]
      limits[#limits + 1] = all[i + 1]
      limits[#limits + 1] = thr[all[i]] or '0'
    end
  end
end
out[#out + 1] = limits
return out
