-- workers: KEYS[1] workers HASH, worker -> '<until ms> <handler names as a
-- JSON array>'. ARGV[1] 'announce': ARGV[2] worker, ARGV[3] ttl ms, ARGV[4]
-- the names; returns the until. ARGV[1] 'list': deletes lapsed and
-- unreadable entries, returns {worker, value, ...} of the others.
-- Announcements only feed the leader's handler-set check, so a key of
-- another type (made by hand) is replaced rather than refused.
local now = now_ms()
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'hash' and kind ~= 'none' then redis.call('DEL', KEYS[1]) end
if ARGV[1] == 'announce' then
  local ttl = nat(ARGV[3])
  if not ttl then return redis.error_reply('ERR workers: ttl is not a whole number') end
  local until_ms = int(now + ttl)
  redis.call('HSET', KEYS[1], ARGV[2], until_ms .. ' ' .. ARGV[4])
  return until_ms
end
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local until_ms = nat(string.match(all[i + 1], '^(%d+) '))
  if until_ms and until_ms > now then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return out
