-- The attempt log: the attempts of a task that ended before its current
-- one, written by the transitions that end an attempt without finishing
-- the task. Uses 01_values.

-- The attempt log (field `y`, TaskRecord::attempt_log in Rust): a JSON
-- array of the attempts that ended before the task's current one, oldest
-- first, at most MAX_LOG, each {"attempt", "worker", "started_at",
-- "ended_at", "outcome", "error"}. Only a retry (finish.lua), a reap back to
-- waiting (reap.lua) and a requeue (requeue.lua) append to it, so a
-- completion pays nothing for it. Entries are written by hand: cjson would
-- print a number past 14 digits rounded. A log that does not decode (edited
-- by hand) is replaced by one holding the new entry, and an entry of the
-- wrong shape is dropped: the log never stops a transition.
local MAX_LOG = 20
local MAX_LOG_ERROR = 8192

-- `s` cut to MAX_LOG_ERROR bytes at a UTF-8 character boundary (the
-- runtime's executor_core::attempt_log::MAX_ERROR_LEN).
local function log_error(s)
  if type(s) ~= 'string' or #s <= MAX_LOG_ERROR then return s end
  local i = MAX_LOG_ERROR
  while i > 0 do
    local b = string.byte(s, i + 1)
    if b < 128 or b >= 192 then break end
    i = i - 1
  end
  return string.sub(s, 1, i)
end

local function log_text(v)
  if type(v) == 'string' then return cjson.encode(v) end
  return 'null'
end

local function log_nat(v)
  if type(v) == 'number' and v >= 0 and v <= SAFE and v == math.floor(v) then return v end
  return nil
end

local function log_entry(e)
  return '{"attempt":' .. int(e.attempt) .. ',"worker":' .. log_text(e.worker) ..
    ',"started_at":' .. (e.started_at and int(e.started_at) or 'null') .. ',"ended_at":' .. int(e.ended_at) ..
    ',"outcome":' .. log_text(e.outcome) .. ',"error":' .. log_text(e.error) .. '}'
end

-- The log `raw` (the `y` field, or false) with `entry` appended, trimmed to
-- the newest MAX_LOG: the value to write back in the transition's own HSET.
-- `entry` is {attempt, worker, started_at, ended_at, outcome, error}.
local function append_attempt(raw, entry)
  local parts = {}
  if type(raw) == 'string' then
    local ok, old = pcall(cjson.decode, raw)
    if ok and type(old) == 'table' then
      for _, e in ipairs(old) do
        if type(e) == 'table' and log_nat(e.attempt) and log_nat(e.ended_at) and type(e.outcome) == 'string' then
          parts[#parts + 1] = log_entry({attempt = e.attempt, worker = e.worker, started_at = log_nat(e.started_at),
            ended_at = e.ended_at, outcome = e.outcome, error = e.error})
        end
      end
    end
  end
  parts[#parts + 1] = log_entry(entry)
  return '[' .. table.concat(parts, ',', math.max(1, #parts - MAX_LOG + 1)) .. ']'
end
