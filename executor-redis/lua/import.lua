-- import: stores a record moved from another tier exactly as given, unless
-- a task with its id exists (idempotent by id: a move repeated after a crash
-- is a no-op). ARGV[3] id, ARGV[4] state, ARGV[5] the score of the index the
-- state belongs to (due, lease until or finished at), then field/value pairs
-- of the hash (Rust checked every number; the attempt log `y` is one). Returns {stored (0|1), now}, or
-- {2, now, reason} when the id's key holds something that is not a task
-- hash: nothing is written, so the other tier keeps its copy.
local id, st, score = ARGV[3], ARGV[4], nat(ARGV[5])
if not STATES[st] then return redis.error_reply('ERR import: unknown state ' .. shown(st)) end
if not score or (#ARGV - 5) % 2 ~= 0 then return redis.error_reply('ERR import: bad arguments') end
check_keys()
local tkey = task_key(id)
local now = now_ms()
local t = redis.call('TYPE', tkey).ok
if t == 'hash' then return {0, int(now)} end
if t ~= 'none' then return {2, int(now), not_a_hash(tkey)} end
local f = {'s', st}
local k, g, v = nil, false, false
for i = 6, #ARGV, 2 do
  f[#f + 1] = ARGV[i]
  f[#f + 1] = ARGV[i + 1]
  if ARGV[i] == 'k' then k = ARGV[i + 1] end
  if ARGV[i] == 'g' then g = ARGV[i + 1] end
  if ARGV[i] == 'v' then v = ARGV[i + 1] end
end
-- The debounce key binds the moved task unless a waiting task holds it here.
local bind = false
if k and (st == 'CREATED' or st == 'PENDING') then
  local bound = redis.call('HGET', KEYS[5], k)
  local held = bound and fields(task_key(bound), 's')
  held = held and held[1]
  bind = held ~= 'CREATED' and held ~= 'PENDING'
end
redis.call('HSET', tkey, unpack(f))
if st == 'CREATED' or st == 'PENDING' then
  local key, q, p = waiting_key(g, v)
  add_waiting(key, q, p, {int(score), id})
  if bind then redis.call('HSET', KEYS[5], k, id) end
  -- Due now or later: a waiter sleeping until a later due time, or for
  -- its whole wait, must look again (the promoted task may be the first).
  wake()
elseif st == 'RUNNING' then
  redis.call('ZADD', KEYS[2], int(score), id)
  -- A running task of a limited queue holds one of its slots.
  local q = g or DEFAULT_QUEUE
  if valid_queue(q) and limits_of(q) then redis.pcall('ZADD', run_key(q), int(now), tkey) end
else
  redis.call('ZADD', finished_set(st), int(score), id)
end
move(nil, st)
flush_counts()
return {1, int(now)}
