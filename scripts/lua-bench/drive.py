#!/usr/bin/env python3
"""Builds a Redis Functions library that times submit.lua, claim.lua and
finish.lua of one Lua directory inside the server (see run.sh): the prelude
(the parts in common/, in the order of their file names, as the storage
assembles them; a directory from before the split has one common.lua), the
three scripts as local functions, and `drive<i>`, which submits N plain
tasks 500 at a time, then claims B at a time and finishes each batch LAG
claims later (so about LAG * B leases are held, as at concurrency 64), and
answers the server time per task of each script body (TIME around each call;
the reply and argument conversion of a real FCALL are not in it).

usage: drive.py LUA_DIR INDEX > library.lua
"""
import os
import sys

lua_dir, index = sys.argv[1], sys.argv[2]
read = lambda name: open(f"{lua_dir}/{name}.lua").read()
print(f"#!lua name=lua_bench_{index}")
print("local KEYS, ARGV = {}, {}")
parts = f"{lua_dir}/common"
if os.path.isdir(parts):
    for name in sorted(os.listdir(parts)):
        if name.endswith(".lua"):
            print(open(f"{parts}/{name}").read())
else:
    print(read("common"))
print("local function submit_body(keys, args)\nKEYS, ARGV = keys, args; begin()\n" + read("submit") + "\nend")
print("local function claim_body(keys, args)\nKEYS, ARGV = keys, args; begin()\n" + read("claim") + "\nend")
print("local function finish_body(keys, args)\nKEYS, ARGV = keys, args; begin()\n" + read("finish") + "\nend")
print("redis.register_function('drive" + index + "', function(keys, args)\n" + r"""
  local N, B, LAG = tonumber(args[1]), tonumber(args[2]), tonumber(args[3])
  local base = '{lua-bench}:'
  local K = {}
  for _, k in ipairs({'due', 'lease', 'dead', 'done', 'debounce', 'wake', 'counts', 'limits'}) do
    K[#K + 1] = base .. k
  end
  local function now_us()
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  local submit_us, made = 0, 0
  while made < N do
    local a = {base, '1', tostring(math.min(500, N - made))}
    for _ = 1, math.min(500, N - made) do
      made = made + 1
      local id = string.format('01a23a6c-31ff-7694-bd93-%012d', made)
      for _, v in ipairs({id, 'noop', 'null', 'n', '0', '3', '', '', '', 'p', '', '', '', 'cefeb7cd' .. made, '', ''}) do
        a[#a + 1] = v
      end
    end
    local t0 = now_us()
    submit_body(K, a)
    submit_us = submit_us + now_us() - t0
  end
  if tonumber(redis.call('HGET', K[7], 'CREATED')) ~= N then return redis.error_reply('submitted too few') end
  local claim_us, finish_us, calls, done = 0, 0, 0, 0
  local held = {}
  while true do
    calls = calls + 1
    local t0 = now_us()
    local got = claim_body(K, {base, '1', 'worker-0123456789abcdef', tostring(B), '30000', 'c' .. calls})[3]
    claim_us = claim_us + now_us() - t0
    if #got > 0 then held[#held + 1] = got end
    if #held == 0 then break end
    if #held > LAG or #got == 0 then
      local batch = table.remove(held, 1)
      local a = {base, '1', tostring(#batch)}
      for _, rec in ipairs(batch) do
        for _, v in ipairs({rec[1], rec[7], 'C', '', '', 'f' .. calls}) do a[#a + 1] = v end
      end
      local t1 = now_us()
      local out = finish_body(K, a)[2]
      finish_us = finish_us + now_us() - t1
      for _, state in ipairs(out) do
        if state ~= 'COMPLETED' then return redis.error_reply('finish answered ' .. state) end
        done = done + 1
      end
    end
  end
  for _, k in ipairs(redis.call('KEYS', base .. '*')) do redis.call('DEL', k) end
  if done ~= N then return redis.error_reply('completed ' .. done .. ' of ' .. N) end
  return {string.format('%.2f', submit_us / N), string.format('%.2f', claim_us / N),
    string.format('%.2f', finish_us / N)}
end)""")
