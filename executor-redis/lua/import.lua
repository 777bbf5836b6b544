-- import: stores a record moved from another tier exactly as given, unless
-- a task with its id exists (idempotent by id: a move repeated after a crash
-- is a no-op). ARGV[3] id, ARGV[4] state, ARGV[5] the score of the index the
-- state belongs to (due, lease until or finished at), then field/value pairs
-- of the hash. Returns {stored (0|1), now}.
local id, st, score = ARGV[3], ARGV[4], ARGV[5]
local tkey = task_key(id)
local now = now_ms()
if redis.call('EXISTS', tkey) == 1 then return {0, int(now)} end
if not STATES[st] then return redis.error_reply('import: unknown state ' .. st) end
local f = {'s', st}
for i = 6, #ARGV do f[#f + 1] = ARGV[i] end
redis.call('HSET', tkey, unpack(f))
if st == 'CREATED' or st == 'PENDING' then
  redis.call('ZADD', KEYS[1], score, id)
  -- The debounce key binds the moved task unless a waiting task holds it here.
  local k = redis.call('HGET', tkey, 'k')
  if k then
    local bound = redis.call('HGET', KEYS[5], k)
    local held = bound and redis.call('HGET', task_key(bound), 's')
    if held ~= 'CREATED' and held ~= 'PENDING' then redis.call('HSET', KEYS[5], k, id) end
  end
  if tonumber(score) <= now then wake() end
elseif st == 'RUNNING' then
  redis.call('ZADD', KEYS[2], score, id)
else
  redis.call('ZADD', finished_set(st), score, id)
end
move(nil, st)
flush_counts()
return {1, int(now)}
