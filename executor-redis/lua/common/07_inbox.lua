-- The inbox: lone submits queued as entries of a list, and the creation
-- of their tasks. Uses 01_values, 02_keys and 06_records.

-- The inbox `<base>inbox` (LIST): a lone plain submit of a task whose id
-- was generated for it (NewTask::has_fresh_id in Rust: no other submit can
-- carry that id, so nothing needs looking up first) is queued there by one
-- RPUSH instead of a script call, and its record created here, by the next
-- claim or peek-then-claim of the partition, or by ingest.lua ahead of
-- every read of tasks. An entry is twelve values, each ended by a newline,
-- then the payload: id, name, due kind (n|a|t), due value, max_attempts,
-- max_duration, timeout, retry, nonce, queue, priority (as submit.lua
-- takes them) and the submitter's clock in ms. A task is created as
-- submit.lua creates it, its creation time the submitter's clock or the
-- server's, whichever is earlier (a clock running ahead never delays a
-- task). A resent RPUSH (same id and nonce) is created once. An entry that
-- does not parse, or whose id is taken, is moved to `<base>inbox:aside`
-- (LIST, the entry behind a line saying why) with a warning in the server
-- log, never lost and never in the way of the entries behind it. A later
-- entry format takes another key, so a worker never meets one it cannot
-- read.
local INBOX_SLICE, INBOX_MAX = 50, 500
local INBOX_ENTRY = '^([^\n]+)\n([^\n]*)\n([nat])\n(%d*)\n(%d+)\n(%d*)\n(%d*)\n([^\n]*)\n([^\n]*)\n([^\n]*)\n(%d?)\n(%d+)\n'

-- Why an inbox entry's values are unusable, or nil.
local function inbox_bad(due_kind, due_value, max_attempts, max_duration, timeout, queue, priority, at)
  if not nat(at) then return 'the submit time is not a whole number' end
  if not (due_kind == 'n' or nat(due_value)) then return 'due is not a whole number' end
  if not nat(max_attempts, U32) then return 'max_attempts is not a whole number' end
  if max_duration ~= '' and not nat(max_duration) then return 'max_duration is not a whole number' end
  if timeout ~= '' and not nat(timeout) then return 'timeout is not a whole number' end
  if queue ~= '' and not valid_queue(queue) then return 'queue is not a queue name' end
  return nil
end

local function inbox_aside(entry, reason)
  redis.log(redis.LOG_WARNING, 'executor-redis: ' .. ARGV[1] .. 'inbox: ' .. reason .. ': entry moved to ' ..
    ARGV[1] .. 'inbox:aside')
  redis.pcall('RPUSH', ARGV[1] .. 'inbox:aside', reason .. '\n' .. entry)
end

-- Creates the tasks of up to INBOX_MAX inbox entries, oldest first, and
-- answers how many entries it left behind and how many tasks it created;
-- the caller flushes the counts. An inbox of another type (edited by hand)
-- is left alone: submits to it fail with WRONGTYPE.
local function ingest(now)
  local key = ARGV[1] .. 'inbox'
  local left = redis.pcall('LLEN', key)
  if type(left) ~= 'number' or left == 0 then return 0, 0 end
  local waiting, created_n = waiting_batch(), 0
  for _ = 1, INBOX_MAX / INBOX_SLICE do
    local entries = redis.call('LRANGE', key, 0, INBOX_SLICE - 1)
    for _, entry in ipairs(entries) do
      local s, e, id, name, due_kind, due_value, max_attempts, max_duration, timeout, retry, nonce, queue,
        priority, at = string.find(entry, INBOX_ENTRY)
      local bad = not s and 'the entry does not parse' or
        inbox_bad(due_kind, due_value, max_attempts, max_duration, timeout, queue, priority, at)
      local tkey = not bad and task_key(id)
      if bad then
        inbox_aside(entry, bad)
      elseif redis.call('EXISTS', tkey) == 1 then
        -- Created by this entry's first copy (a resent RPUSH), or an id
        -- someone else took (written by hand): set aside.
        if not (redis.call('TYPE', tkey).ok == 'hash' and nonce ~= '' and
            redis.call('HGET', tkey, 'h') == nonce) then
          inbox_aside(entry, 'task ' .. shown(id) .. ' already exists')
        end
      else
        local created = math.min(nat(at), now)
        local due = created
        if due_kind == 'a' then due = created + nat(due_value) elseif due_kind == 't' then due = nat(due_value) end
        local deadline = max_duration ~= '' and created + nat(max_duration) or nil
        local lkey, q, p = write_task(tkey, name, string.sub(entry, e + 1), max_attempts, int(created), int(due),
          deadline, timeout, retry, nil, nonce, queue, priority)
        waiting.add(lkey, q, p, int(due), id)
        created_n = created_n + 1
      end
    end
    redis.call('LTRIM', key, #entries, -1)
    left = left - #entries
    if #entries < INBOX_SLICE or left <= 0 then break end
  end
  waiting.flush()
  return math.max(left, 0), created_n
end
