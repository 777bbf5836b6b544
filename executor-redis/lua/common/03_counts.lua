-- Counts: the counts hash (KEYS[7], tasks per state), changed per call
-- and written once at its end, with the tidying of the levels a call left.
-- Uses 01_values and 02_keys.

-- Count changes are gathered per call and written once per state. A count
-- that reaches zero is deleted, so a namespace whose tasks are all gone
-- leaves no counts hash behind (Redis drops an empty hash).
local deltas -- per call: begin() in 07_begin
local function move(from, to)
  if from then deltas[from] = (deltas[from] or 0) - 1 end
  if to then deltas[to] = (deltas[to] or 0) + 1 end
end

-- The count of `state` including this call's changes so far.
local function count_of(state)
  local n = tonumber(redis.pcall('HGET', KEYS[7], state)) or 0
  return n + (deltas[state] or 0)
end

-- The state a record found in index `index` was counted under when its own
-- state field cannot be trusted: `hint` when it is a state of that index
-- with a count, else the first state of the index with a count, else nil
-- (nothing to take back). Exact whenever the hint is right or only one
-- state of the index has tasks.
local function counted(index, hint)
  if not index then return nil end
  if hint and INDEX_OF[hint] == index and count_of(hint) > 0 then return hint end
  local states = ({{'CREATED', 'PENDING'}, {'RUNNING'}, {'ERROR', 'FAILED', 'TIMEOUT'},
    {'COMPLETED', 'CANCELLED'}})[index]
  for _, s in ipairs(states) do
    if count_of(s) > 0 then return s end
  end
  return nil
end

-- Writes with pcall: a count field that is not a number (edited by hand) is
-- replaced rather than failing the call after its other writes.
local function flush_counts()
  for state, d in pairs(deltas) do
    if d ~= 0 then
      local n = redis.pcall('HINCRBY', KEYS[7], state, d)
      if type(n) == 'table' then
        redis.log(redis.LOG_WARNING, 'executor-redis: ' .. KEYS[7] .. ' ' .. state .. ': ' .. tostring(n.err))
        if d > 0 then redis.pcall('HSET', KEYS[7], state, d) else redis.pcall('HDEL', KEYS[7], state) end
      elseif n <= 0 then
        -- Zero (or below, after a hand edit): no tasks in the state.
        redis.pcall('HDEL', KEYS[7], state)
      end
    end
  end
  deltas = {}
  tidy_levels()
end
