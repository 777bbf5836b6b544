-- leader_release: KEYS[1] leader HASH; frees the seat only if ARGV[1] is the
-- token of the current term. Returns 1 when freed.
local term = fields(KEYS[1], 't')
if term and term[1] == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
